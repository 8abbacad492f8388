/* A generated recorder's direct entry called as the dispatcher calls it
 * (src/runtime/user/dispatch.S .Lrecorder): bx, bp, r12-r15 loaded from
 * callee[] (the probed values, which the entry reads where they are),
 * then fn(kp, regs). For t/recorder-test and fuzz/fuzz-recorder. */
#ifndef KPREWRITE_T_RECORDER_CALL_H
#define KPREWRITE_T_RECORDER_CALL_H
int call_direct(void *fn, void *kp, void *regs, const unsigned long *callee);
__asm__(".text\n"
        ".globl call_direct\n"
        "call_direct:\n"
        "  push %rbx; push %rbp; push %r12; push %r13; push %r14; push %r15\n"
        "  sub $8, %rsp\n"
        "  mov %rdi, %rax; mov %rsi, %rdi; mov %rdx, %rsi\n"
        "  mov 0(%rcx), %rbx; mov 8(%rcx), %rbp; mov 16(%rcx), %r12\n"
        "  mov 24(%rcx), %r13; mov 32(%rcx), %r14; mov 40(%rcx), %r15\n"
        "  call *%rax\n"
        "  add $8, %rsp\n"
        "  pop %r15; pop %r14; pop %r13; pop %r12; pop %rbp; pop %rbx\n"
        "  ret\n");
#endif
