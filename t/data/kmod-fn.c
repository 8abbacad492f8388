/*
 * t/kernel-module.t: stands in for a loadable kernel module (a relocatable
 * object, built without a red zone as kernel code is): its functions'
 * first instructions carry the relocations a module's do - calls to the
 * kernel (PLT32), its own data (PC32), an address as an immediate (32,
 * which the loader writes into the code), a call to a static function of
 * its own section (no relocation: the assembler resolved it) - and one
 * lives in a second text section.
 */
long kmod_ext(long a);          /* "the kernel's": kmod-main.c */
long kmod_counter;
static long table[4] = { 10, 20, 30, 40 };

long kmod_add(long a, long b)
{
    return a * 3 + b;
}

long kmod_call(long a)
{
    long r = kmod_ext(a);       /* first: the call is in the DCR */
    kmod_counter += r;
    return r + 1;
}

long kmod_data(long i)
{
    kmod_counter++;             /* first: a RIP-relative increment */
    return table[i & 3] + kmod_counter;
}

__attribute__((noinline)) static long kmod_helper(long a)
{
    return a ^ 0x5a5a;
}

long kmod_local(long a)
{
    return kmod_helper(a) + kmod_helper(a + 1);
}

long *kmod_addr(void)
{
    return &kmod_counter;       /* mov $kmod_counter,%eax: the loader writes the code */
}

__attribute__((section(".text.unlikely"))) long kmod_cold(long a)
{
    return a - 7;
}
