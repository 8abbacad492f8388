/* A shared library built without the runtime, and (with -DMAIN) a program
 * using it, or (with -DDLOPEN) one opening it (or each library it is
 * given) with dlopen, for t/prebuilt.t. */
#include <stdio.h>
#ifdef DLOPEN
#include <dlfcn.h>
int main(int argc, char **argv)
{
    /* each library named (libpb.so when none is), opened, called and closed in turn */
    for (int i = 1; i < (argc > 1 ? argc : 2); i++) {
        void *h = dlopen(argc > 1 ? argv[i] : "libpb.so", RTLD_NOW | RTLD_LOCAL);
        int (*sum)(int) = h ? (int (*)(int))dlsym(h, "lib_sum") : NULL;
        if (!sum) {
            printf("dlopen: %s\n", dlerror());
            return 1;
        }
        printf("lib_sum %d\n", sum(777));
        dlclose(h);   /* the same library named again is opened again */
    }
    return 0;
}
#elif !defined(MAIN)
__attribute__((noinline)) int lib_scale(int x) { return x * 3 + 1; }
int lib_sum(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += lib_scale(i) & 0xff;
    return s;
}
#else
int lib_sum(int n);
int main(void)
{
    printf("lib_sum %d\n", lib_sum(777));
    return 0;
}
#endif
