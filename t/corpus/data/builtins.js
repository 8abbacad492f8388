// The node workload of the corpus (t/corpus/workloads.sh, wl_node): V8's
// builtins run hot - JSON, regular expressions, arrays, typed arrays,
// strings, Map/Set, BigInt, generators, promises, exceptions thrown through
// builtins - and zlib and crypto of node. Deterministic: a fixed-seed
// generator, no time, no addresses; only results are printed (no stack
// traces, no compressed bytes: node's bundled zlib and Debian's may differ),
// the same with Debian 12's node 18 and node 20.
'use strict';
const zlib = require('zlib');
const crypto = require('crypto');

let seed = 42;
function rnd(n) { seed = (seed * 16807) % 2147483647; return seed % n; }
const words = ['alpha', 'beta', 'gamma', 'delta', 'kernel', 'probe', 'jump', 'detour', 'int3', 'omega'];
function word() { return words[rnd(words.length)]; }
const sha = (s) => crypto.createHash('sha256').update(s).digest('hex').slice(0, 16);
const out = [];
function say(...a) { out.push(a.join(' ')); }

// JSON: objects made, stringified, parsed back, with a reviver and a replacer
function json() {
    const recs = [];
    for (let i = 0; i < 20000; i++)
        recs.push({ id: i, name: word() + '-' + rnd(1000), tags: [word(), word()], score: rnd(100000) / 100,
                    nested: { ok: (i & 1) === 0, list: [i, i * 2, i * 3] } });
    const text = JSON.stringify(recs);
    let back = JSON.parse(text, (k, v) => (k === 'score' ? Math.round(v) : v));
    const pretty = JSON.stringify(back.slice(0, 200), ['id', 'name', 'score'], 2);
    let errors = 0;
    for (let i = 0; i < 3000; i++) {
        try { JSON.parse(text.slice(0, 50 + rnd(5000))); } catch (e) { errors += e instanceof SyntaxError; }
    }
    say('json', text.length, sha(text), back.length, sha(pretty), errors);
}

// Regular expressions: exec loops, replace with callbacks, named groups,
// sticky and unicode, split, matchAll, a backtracking pattern
function regexps() {
    const lines = [];
    for (let i = 0; i < 20000; i++)
        lines.push(`${word()}@${word()}.example.org 0x${(rnd(1 << 24)).toString(16)} ${2000 + rnd(25)}-0${1 + rnd(9)}-1${rnd(10)} ${word()} ${word()}`);
    const text = lines.join('\n');
    const mail = /(?<user>[a-z]+)@(?<host>[a-z]+)\.example\.org/g;
    let m, hosts = new Map();
    while ((m = mail.exec(text)) !== null) hosts.set(m.groups.host, (hosts.get(m.groups.host) || 0) + 1);
    const swapped = text.replace(/(\d{4})-(\d{2})-(\d{2})/g, (all, y, mo, d) => `${d}/${mo}/${y}`);
    const hex = [...text.matchAll(/0x([0-9a-f]+)/g)].reduce((a, x) => (a + parseInt(x[1], 16)) % 1000000007, 0);
    const sticky = /\w+\s?/y;
    let n = 0;
    for (const l of lines.slice(0, 2000)) { sticky.lastIndex = 0; while (sticky.exec(l)) n++; }
    const twice = lines.filter((l) => /\b(\w+) \1$/.test(l)).length;
    const uni = 'ÄÖÜ äöü 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ñ'.repeat(500).match(/\p{L}+/gu).length;
    const parts = text.split(/[\s@.]+/).length;
    say('regexp', [...hosts].sort().map((x) => x.join(':')).join(','), sha(swapped), hex, n, twice, uni, parts);
}

// Arrays and typed arrays: sort with a comparator, map/filter/reduce,
// flat, from, fill, copyWithin, indexOf, typed-array sort and subarray
function arrays() {
    const a = Array.from({ length: 60000 }, () => rnd(1000000));
    const sorted = a.slice().sort((x, y) => x - y);
    const strs = a.slice(0, 20000).map(String).sort();
    const r = a.map((x) => x * 3).filter((x) => x % 7 === 1).reduce((s, x) => (s + x) % 1000003, 0);
    const flat = a.slice(0, 3000).map((x) => [x, [x + 1, [x + 2]]]).flat(2).length;
    const ta = new Float64Array(a.slice(0, 40000));
    ta.sort();
    const i32 = Int32Array.from(a.slice(0, 40000), (x) => x - 500000);
    i32.reverse().copyWithin(0, 100, 2000);
    let s = 0;
    for (let i = 0; i < i32.length; i += 97) s = (s + i32[i] * i) % 1000000007;
    const idx = sorted.indexOf(a[12345]) >= 0;
    const spliced = a.slice(0, 1000); spliced.splice(100, 50, ...sorted.slice(0, 20));
    say('array', sorted[0], sorted[59999], sha(strs.join()), r, flat, ta[0], ta[39999], s, idx, spliced.length,
        a.includes(sorted[30000]), a.findLast((x) => x % 1000 === 7) ?? 'none');
}

// Strings: building, split/join, pad, repeat, case, trim, at, code points,
// template literals, localeCompare left out (ICU versions differ)
function strings() {
    let b = '';
    for (let i = 0; i < 30000; i++) b += word().toUpperCase().padStart(8, '.') + (i % 10 === 9 ? '\n' : ' ');
    const ws = b.split(/\s+/).filter(Boolean);
    const counts = {};
    for (const w of ws) counts[w] = (counts[w] || 0) + 1;
    const rev = ws.slice(0, 5000).map((w) => [...w].reverse().join('')).join('|');
    const cp = [...'kprewrite 🚀 probes ✓'].map((c) => c.codePointAt(0)).reduce((x, y) => x + y, 0);
    const trimmed = ws.map((w) => w.replace(/^\.+/, '').toLowerCase().trim()).join(',');
    say('string', b.length, sha(b), Object.keys(counts).sort().map((k) => k + '=' + counts[k]).join(' '), sha(rev), cp,
        sha(trimmed), 'x'.repeat(5).at(-1), b.lastIndexOf('PROBE'), b.startsWith('...'));
}

// Map, Set, WeakMap, BigInt, generators, classes, exceptions through builtins
function misc() {
    const m = new Map(), st = new Set(), wm = new WeakMap();
    for (let i = 0; i < 50000; i++) {
        const k = word() + rnd(500);
        m.set(k, (m.get(k) || 0) + 1);
        st.add(rnd(20000));
        if (i % 100 === 0) wm.set({ i }, i);
    }
    let big = 1n;
    for (let i = 1n; i <= 300n; i++) big *= i;
    function* fib() { let [x, y] = [0n, 1n]; for (;;) { yield x; [x, y] = [y, x + y]; } }
    let f, g = fib();
    for (let i = 0; i < 500; i++) f = g.next().value;
    class Shape { area() { throw new RangeError('abstract'); } }
    class Sq extends Shape { constructor(s) { super(); this.s = s; } area() { return this.s * this.s; } }
    let caught = 0, area = 0;
    for (let i = 0; i < 20000; i++) {
        const sh = i % 5 ? new Sq(i % 13) : new Shape();
        try { area += sh.area(); } catch (e) { caught += e instanceof RangeError; }
        try { [].reduce((x, y) => x + y); } catch (e) { caught += e instanceof TypeError; }
        try { null.x; } catch (e) { caught++; }
    }
    const entries = Object.fromEntries([...m].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).slice(0, 5));
    say('misc', m.size, st.size, sha(JSON.stringify(entries)), big.toString().length, big % 1000000007n,
        f.toString().slice(0, 20), caught, area, Math.hypot(3, 4), (1234.5678).toFixed(2), Number('0x1f'),
        new Date(Date.UTC(2020, 1, 29, 12)).toISOString(), encodeURIComponent('a b&c/ü'));
}

// node: zlib round trips (sync and streamed), crypto hashes and an HMAC
async function node() {
    const data = Buffer.from(Array.from({ length: 40000 }, () => word()).join(' '));
    const back = [zlib.inflateSync(zlib.deflateSync(data)), zlib.gunzipSync(zlib.gzipSync(data, { level: 1 })),
                  zlib.brotliDecompressSync(zlib.brotliCompressSync(data.subarray(0, 50000)))];
    const streamed = await new Promise((resolve, reject) => {
        const chunks = [];
        const z = zlib.createGzip(), u = zlib.createGunzip();
        u.on('data', (c) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
        z.pipe(u);
        for (let i = 0; i < data.length; i += 7000) z.write(data.subarray(i, i + 7000));
        z.end();
    });
    const h = ['sha1', 'sha256', 'sha512', 'md5'].map((a) => crypto.createHash(a).update(data).digest('hex').slice(0, 12));
    const mac = crypto.createHmac('sha256', 'key').update(data).digest('base64');
    const results = await Promise.all([1, 2, 3].map(async (x) => { await null; return x * 2; }));
    say('node', data.length, back.map((b) => b.equals(data.subarray(0, b.length)) + ':' + b.length).join(' '),
        streamed.equals(data), h.join(' '), mac, results.join(','), data.toString('base64').length);
}

(async () => {
    for (const f of [json, regexps, arrays, strings, misc]) f();
    await node();
    console.log(out.join('\n'));
})().catch((e) => { console.log('FAILED', e && e.message); process.exitCode = 1; });
