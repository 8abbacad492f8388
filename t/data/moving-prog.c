/* t/moving.t: runs the blob of moving-blob.S from a copy far from the
 * program, as V8 runs its embedded builtins with short builtin calls: the
 * copy is made at run time from the loaded bytes, so a probe's jump in the
 * blob would be copied too, and its rel32 would land where nothing is. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* the getters V8 exports (moving-blob.S) */
const uint8_t *_ZN2v88internal23DefaultEmbeddedBlobCodeEv(void);
uint32_t _ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv(void);
long Builtins_Add(long a, long b);
long Builtins_Mul3(long a);
long Builtins_SumTo(long n);
int before_blob(void);
unsigned char after_blob(void);
int after_blob_big(void);
long outside_fn(long x);

/* far from everything the loader maps (its rel32 reach included) */
#define COPY_AT ((void *)0x200000000000ull)

static const uint8_t *blob;
static uint8_t *copy;

/* f as the copy has it */
#define IN_COPY(f) ((__typeof__(&f))(void *)(copy + ((const uint8_t *)(void *)(f) - blob)))

__attribute__((noinline)) long square(long x)
{
    return x * x;
}

int main(void)
{
    blob = _ZN2v88internal23DefaultEmbeddedBlobCodeEv();
    uint32_t size = _ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv();
    size_t len = (size + 4095) & ~(size_t)4095;
    copy = mmap(COPY_AT, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (copy != COPY_AT) {
        perror("mmap at 0x200000000000");
        return 2;
    }
    memcpy(copy, blob, size);
    if (mprotect(copy, len, PROT_READ | PROT_EXEC) != 0) {
        perror("mprotect");
        return 2;
    }
    printf("blob: %u bytes, copied\n", size);
    long total = 0;
    for (long i = 1; i <= 10; i++) {
        long s = IN_COPY(Builtins_SumTo)(100 * i), m = IN_COPY(Builtins_Mul3)(i), a = IN_COPY(Builtins_Add)(i, 7);
        printf("%ld: sum %ld, 3*i %ld, i+7 %ld, i*i %ld\n", i, s, m, a, square(i));
        total += s + m + a;
    }
    printf("total %ld; in place: %ld %ld %ld\n", total, Builtins_Add(2, 3), Builtins_Mul3(5), Builtins_SumTo(10));
    printf("around the blob: %d %u %d; outside_fn(10) = %ld\n", before_blob(), after_blob(), after_blob_big(),
           outside_fn(10));
    return 0;
}
