/* t/entry-align.t: a function entered with the stack 16-aligned, not
 * 8 mod 16 as the ABI has it at a function's entry (hand-written code may
 * do that): call_odd calls odd_entry straight from its own entry. */
        .text
        .globl  call_odd, odd_entry
        .type   call_odd, @function
call_odd:
        .cfi_startproc
        call    odd_entry
        ret
        .cfi_endproc
        .size   call_odd, .-call_odd
        .type   odd_entry, @function
odd_entry:
        .cfi_startproc
        mov     $42, %eax
        ret
        .cfi_endproc
        .size   odd_entry, .-odd_entry
        .section .note.GNU-stack,"",@progbits
