# python3 workload: exceptions raised and caught through C and Python
# frames, generators and context managers, re, json, hashlib (OpenSSL),
# zlib, sorting, big integers. Deterministic: no hash-ordered output, no
# time, fixed seed.
import hashlib, json, re, zlib, random, decimal, itertools, collections

random.seed(42)

class Bad(Exception):
    def __init__(self, code): super().__init__(code); self.code = code

def risky(i, depth):
    if depth:
        return risky(i, depth - 1) + 1
    if i % 3 == 0: raise Bad(i)
    if i % 5 == 0: return {}[i]              # KeyError from C
    if i % 7 == 0: return int("x%d" % i)     # ValueError from C
    return i

total, codes, kinds = 0, 0, collections.Counter()
for i in range(60000):
    try:
        total += risky(i, i % 6)
    except Bad as e:
        codes += e.code
    except (KeyError, ValueError) as e:
        kinds[type(e).__name__] += 1
    finally:
        total += 1
print("exceptions", total, codes, sorted(kinds.items()))

class Ctx:
    n = 0
    def __enter__(self): Ctx.n += 1; return self
    def __exit__(self, t, v, tb): Ctx.n += 10; return t is ZeroDivisionError
for i in range(20000):
    with Ctx():
        if i % 4 == 0: 1 // 0
print("with", Ctx.n)

def gen(n):
    for i in range(n):
        try:
            yield i * i
        finally:
            pass
g = sum(x for k in range(200) for x in gen(k))
print("generators", g, sum(itertools.islice(itertools.count(7, 3), 1000)))

words = ["%s%d" % (random.choice(["alpha", "beta", "gamma", "delta"]), random.randrange(10000)) for _ in range(60000)]
words.sort(key=lambda w: (w[::-1], len(w)))
pat = re.compile(r"(?P<w>[a-z]+)(?P<n>\d{2,3})\b")
hits = collections.Counter(m.group("w") for w in words for m in [pat.match(w)] if m)
print("re", words[0], words[-1], sorted(hits.items()), len(re.findall(r"a(?:lph|mm)a\d+", " ".join(words))))

doc = {"items": [{"id": i, "name": words[i], "tags": [words[i][:3], i % 7], "v": i / 7} for i in range(20000)]}
s = json.dumps(doc, sort_keys=True)
back = json.loads(s)
print("json", len(s), back["items"][12345]["name"], hashlib.sha256(s.encode()).hexdigest())
z = zlib.compress(s.encode(), 6)
print("zlib", len(z), zlib.crc32(zlib.decompress(z)))
h = hashlib.sha512()
for i in range(3000): h.update(("%d:%s" % (i, words[i])).encode())
print("hash", h.hexdigest()[:32], hashlib.md5(s.encode()).hexdigest())
decimal.getcontext().prec = 60
print("decimal", decimal.Decimal(2).sqrt(), pow(3, 20000, 10**40), len(str(2 ** 10000)), (7 ** 5000) % 1000003)
