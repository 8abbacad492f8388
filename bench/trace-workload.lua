-- bench/trace-workload.sh's script: string and table work in Lua 5.4,
-- about 66 probed function entries an iteration
local n = tonumber(arg[1]) or 2000
local t = {}
for i = 1, n do t[#t + 1] = tostring(i) .. "x" end
local s = 0
for _, v in ipairs(t) do s = s + #v + select('#', v, v) end
print(s)
