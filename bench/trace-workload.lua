-- bench/trace-workload.sh's script: string and table work in Lua 5.4,
-- about 66 probed function entries an iteration
local n = tonumber(arg[1]) or 2000
-- the loops' own CPU time on stderr (the process's start-up, and the
-- making of an event ring at the first probed call, left out)
local c0 = os.clock()
local t = {}
for i = 1, n do t[#t + 1] = tostring(i) .. "x" end
local s = 0
for _, v in ipairs(t) do s = s + #v + select('#', v, v) end
local c1 = os.clock()
print(s)
io.stderr:write(string.format("loops_us %d\n", math.floor((c1 - c0) * 1e6)))
