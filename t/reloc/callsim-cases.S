/*
 * Cases for t/reloc/callsim-test.c: an original call (cs_NAME_orig, its
 * return address cs_NAME_ret) and a copy that should or should not
 * emulate it (cs_NAME_copy). Nothing here runs: the test decodes it.
 */
        .text
        .globl cs_target, cs_other
cs_target:
        ret
cs_other:
        ret

#define CASE(name) .globl cs_##name##_orig, cs_##name##_ret, cs_##name##_copy

/* the sequence kprewrite emits today, up to the jump */
#define PUSH_RET(name) \
        lea -8(%rsp), %rsp; push %rax; lea cs_##name##_ret(%rip), %rax; mov %rax, 8(%rsp); pop %rax

/* --- direct calls --- */
        CASE(direct_ok)
cs_direct_ok_orig:      call cs_target
cs_direct_ok_ret:
cs_direct_ok_copy:      PUSH_RET(direct_ok); jmp cs_target

        CASE(direct_xchg)       /* another correct form */
cs_direct_xchg_orig:    call cs_target
cs_direct_xchg_ret:
cs_direct_xchg_copy:    push %rax; lea cs_direct_xchg_ret(%rip), %rax; xchg %rax, (%rsp); jmp cs_target

        CASE(direct_ret)        /* push the return address and the target, ret */
cs_direct_ret_orig:     call cs_target
cs_direct_ret_ret:
cs_direct_ret_copy:     push %rax; push %rax; lea cs_direct_ret_ret(%rip), %rax; mov %rax, 8(%rsp)
                        lea cs_target(%rip), %rax; xchg %rax, (%rsp); ret

        CASE(direct_pushf)      /* flags changed between pushf and popf: fine */
cs_direct_pushf_orig:   call cs_target
cs_direct_pushf_ret:
cs_direct_pushf_copy:   lea -8(%rsp), %rsp; pushfq; push %rax; lea cs_direct_pushf_ret(%rip), %rax
                        mov %rax, 16(%rsp); add $0, %rax; pop %rax; popfq; jmp cs_target

        CASE(direct_other)      /* goes elsewhere */
cs_direct_other_orig:   call cs_target
cs_direct_other_ret:
cs_direct_other_copy:   PUSH_RET(direct_other); jmp cs_other

        CASE(direct_poolret)    /* pushes an address in the copy */
cs_direct_poolret_orig: call cs_target
cs_direct_poolret_ret:
cs_direct_poolret_copy: lea -8(%rsp), %rsp; push %rax; lea 1f(%rip), %rax; mov %rax, 8(%rsp); pop %rax
                        jmp cs_target
1:      ret

        CASE(direct_sub)        /* sub changes the flags */
cs_direct_sub_orig:     call cs_target
cs_direct_sub_ret:
cs_direct_sub_copy:     sub $8, %rsp; push %rax; lea cs_direct_sub_ret(%rip), %rax; mov %rax, 8(%rsp); pop %rax
                        jmp cs_target

        CASE(direct_rax)        /* %rax not restored */
cs_direct_rax_orig:     call cs_target
cs_direct_rax_ret:
cs_direct_rax_copy:     lea -8(%rsp), %rsp; lea cs_direct_rax_ret(%rip), %rax; mov %rax, (%rsp); jmp cs_target

        CASE(direct_frame)      /* writes the caller's frame, %rsp left at %rsp0 */
cs_direct_frame_orig:   call cs_target
cs_direct_frame_ret:
cs_direct_frame_copy:   push %rax; lea cs_direct_frame_ret(%rip), %rax; mov %rax, 8(%rsp); pop %rax; jmp cs_target

        CASE(direct_call)       /* a real call from the copy */
cs_direct_call_orig:    call cs_target
cs_direct_call_ret:
cs_direct_call_copy:    call cs_target

        CASE(direct_and)        /* not followed */
cs_direct_and_orig:     call cs_target
cs_direct_and_ret:
cs_direct_and_copy:     and $-16, %rsp; jmp cs_target

        CASE(direct_deep)       /* a store below the red zone */
cs_direct_deep_orig:    call cs_target
cs_direct_deep_ret:
cs_direct_deep_copy:    mov %rax, -200(%rsp); PUSH_RET(direct_deep); jmp cs_target

        CASE(direct_global)     /* a store outside the stack */
cs_direct_global_orig:  call cs_target
cs_direct_global_ret:
cs_direct_global_copy:  mov %rax, cs_ptr(%rip); PUSH_RET(direct_global); jmp cs_target

/* --- indirect calls through a register --- */
        CASE(reg_ok)
cs_reg_ok_orig:         call *%rax
cs_reg_ok_ret:
cs_reg_ok_copy:         PUSH_RET(reg_ok); jmp *%rax

        CASE(reg_r11)
cs_reg_r11_orig:        call *%r11
cs_reg_r11_ret:
cs_reg_r11_copy:        PUSH_RET(reg_r11); jmp *%r11

        CASE(reg_wrong)         /* another register */
cs_reg_wrong_orig:      call *%rcx
cs_reg_wrong_ret:
cs_reg_wrong_copy:      PUSH_RET(reg_wrong); jmp *%rdx

        CASE(reg_clobbered)     /* %rax holds the return address at the jump */
cs_reg_clobbered_orig:  call *%rax
cs_reg_clobbered_ret:
cs_reg_clobbered_copy:  lea -8(%rsp), %rsp; lea cs_reg_clobbered_ret(%rip), %rax; mov %rax, (%rsp); jmp *%rax

/* --- indirect calls through memory --- */
        CASE(rsp_ok)            /* *8(%rsp) before the push is 16(%rsp) after it */
cs_rsp_ok_orig:         call *8(%rsp)
cs_rsp_ok_ret:
cs_rsp_ok_copy:         PUSH_RET(rsp_ok); jmp *16(%rsp)

        CASE(rsp_stale)         /* not compensated */
cs_rsp_stale_orig:      call *8(%rsp)
cs_rsp_stale_ret:
cs_rsp_stale_copy:      PUSH_RET(rsp_stale); jmp *8(%rsp)

        CASE(rsp0_ok)           /* *(%rsp) */
cs_rsp0_ok_orig:        call *(%rsp)
cs_rsp0_ok_ret:
cs_rsp0_ok_copy:        PUSH_RET(rsp0_ok); jmp *8(%rsp)

        CASE(rsp0_ret)          /* reads the return address just pushed */
cs_rsp0_ret_orig:       call *(%rsp)
cs_rsp0_ret_ret:
cs_rsp0_ret_copy:       PUSH_RET(rsp0_ret); jmp *(%rsp)

        CASE(rip_ok)
cs_rip_ok_orig:         call *cs_ptr(%rip)
cs_rip_ok_ret:
cs_rip_ok_copy:         PUSH_RET(rip_ok); jmp *cs_ptr(%rip)

        CASE(rip_other)         /* another slot */
cs_rip_other_orig:      call *cs_ptr(%rip)
cs_rip_other_ret:
cs_rip_other_copy:      PUSH_RET(rip_other); jmp *cs_ptr+8(%rip)

        CASE(rip_zero)          /* today's emitter: jmp 0 (here: a jmp to cs_target) */
cs_rip_zero_orig:       call *cs_ptr(%rip)
cs_rip_zero_ret:
cs_rip_zero_copy:       PUSH_RET(rip_zero); jmp cs_target

        CASE(rdi_ok)
cs_rdi_ok_orig:         call *(%rdi)
cs_rdi_ok_ret:
cs_rdi_ok_copy:         PUSH_RET(rdi_ok); jmp *(%rdi)

        CASE(rax_mem_ok)        /* through %rax after %rax is back */
cs_rax_mem_ok_orig:     call *0x10(%rax)
cs_rax_mem_ok_ret:
cs_rax_mem_ok_copy:     PUSH_RET(rax_mem_ok); jmp *0x10(%rax)

        CASE(rax_mem_early)     /* through %rax while it holds the return address */
cs_rax_mem_early_orig:  call *0x10(%rax)
cs_rax_mem_early_ret:
cs_rax_mem_early_copy:  lea -8(%rsp), %rsp; push %rax; lea cs_rax_mem_early_ret(%rip), %rax; mov %rax, 8(%rsp)
                        jmp *0x10(%rax)

        CASE(sib_ok)
cs_sib_ok_orig:         call *0x8(%rbx,%rcx,8)
cs_sib_ok_ret:
cs_sib_ok_copy:         PUSH_RET(sib_ok); jmp *0x8(%rbx,%rcx,8)

        CASE(fs_ok)
cs_fs_ok_orig:          call *%fs:0x28
cs_fs_ok_ret:
cs_fs_ok_copy:          PUSH_RET(fs_ok); jmp *%fs:0x28

        CASE(fs_lost)           /* the segment dropped */
cs_fs_lost_orig:        call *%fs:0x28
cs_fs_lost_ret:
cs_fs_lost_copy:        PUSH_RET(fs_lost); jmp *0x28

        .section .data.rel.ro, "aw"
        .p2align 3
cs_ptr: .quad cs_target, cs_other
        .section .note.GNU-stack, "", @progbits
