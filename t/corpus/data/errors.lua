-- lua5.4 workload: errors raised and caught (error/pcall/xpcall unwind
-- with longjmp), coroutines (each has its own C stack slice: lua_resume
-- and lua_yield), closures, string patterns and table sorts. Deterministic:
-- fixed seed, no time, no addresses printed.
math.randomseed(42)
local function lcg(s) return (s * 16807) % 2147483647 end

-- 1. errors through nested pcall, error objects, error in error handler
local caught, objs, msgs = 0, 0, {}
local function risky(i, depth)
  if depth > 0 then return risky(i, depth - 1) + 1 end
  if i % 3 == 0 then error("bad " .. i) end
  if i % 5 == 0 then error({ code = i }) end
  if i % 7 == 0 then local t = nil; return t.field end   -- a runtime error
  return i
end
local sum = 0
for i = 1, 60000 do
  local ok, r = pcall(risky, i, i % 8)
  if ok then sum = sum + r
  elseif type(r) == "table" then objs = objs + r.code
  else caught = caught + 1; if i < 40 then msgs[#msgs + 1] = tostring(r):gsub("^.-:%d+: ", "") end end
end
print("pcall", sum, caught, objs, table.concat(msgs, "|"))
local tb = 0
for i = 1, 3000 do
  local ok, r = xpcall(function() error(i) end, function(m) return "handled " .. tostring(m) end)
  if not ok and r == "handled " .. i then tb = tb + 1 end
end
print("xpcall", tb)

-- 2. coroutines: generators, errors inside coroutines, wrap
local function gen(n)
  return coroutine.wrap(function()
    local s = n
    for i = 1, 200 do s = lcg(s); coroutine.yield(s % 1000) end
  end)
end
local total = 0
for k = 1, 300 do for v in gen(k) do total = total + v end end
print("coroutines", total)
local co_err = 0
for k = 1, 2000 do
  local co = coroutine.create(function(x) coroutine.yield(x); error("in co " .. x) end)
  coroutine.resume(co, k)
  local ok, e = coroutine.resume(co)
  if not ok then co_err = co_err + 1 end
end
print("coroutine errors", co_err)

-- 3. strings, patterns, tables
local words, s = {}, 7
for i = 1, 40000 do s = lcg(s); words[i] = string.format("w%05d-%s", s % 99991, string.rep(string.char(97 + s % 26), 1 + s % 5)) end
table.sort(words, function(a, b) return a:sub(2, 6) > b:sub(2, 6) or (a:sub(2, 6) == b:sub(2, 6) and a < b) end)
local text = table.concat(words, " ", 1, 5000)
local n = 0
for w, d in text:gmatch("w(%d+)%-(%a+)") do n = n + #w + #d end
local replaced = text:gsub("(%d)(%d)", "%2%1"):sub(1, 60)
print("strings", words[1], words[#words], n, replaced)
local t = {}
for i = 1, 100000 do t[i % 5003] = (t[i % 5003] or 0) + i end
local acc = 0
for k, v in pairs(t) do acc = (acc + k * v) % 1000000007 end
print("tables", acc, #t)
