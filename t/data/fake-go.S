/* A Go-like image for t/fuzz-regress.t: two functions in .text and a Go
 * 1.18 function table (.gopclntab) naming them main.a and main.b, each
 * with an SP table; the test breaks the table's counts and offsets. Field
 * offsets from the section's start are in the comments (1.18's).
 * --defsym GOVER=116 or 120 writes the same table in Go 1.16's layout (no
 * textStart, pointers for entries, a record's entry a pointer, no flag
 * byte) or 1.20's (startLine before funcID, main.b flagged SPWRITE), as
 * the runtime2.go of those releases lays them out. */
        .ifndef GOVER
        .set    GOVER, 118
        .endif
        .text
        .globl  _start
_start:
fa:     push    %rbp                    /* main.a: 9 bytes of code, 8 of padding */
        mov     %rsp, %rbp
        pop     %rbp
        nop
        nop
        nop
        ret
        .fill   8, 1, 0xcc
fb:     mov     %rdi, %rsp              /* main.b: 9 bytes, loading %rsp (no SPWRITE flag) */
        xor     %edi, %edi
        syscall
        nop
        nop
        .fill   8, 1, 0xcc
fend:

        .section .gopclntab, "a"
        .balign 32
hdr:
        .if GOVER == 116
        .long   0xfffffffa              /* magic (Go 1.16) */
        .byte   0, 0, 1, 8
        .quad   2                       /* nfunc */
        .quad   0                       /* nfiles */
        .quad   names - hdr             /* funcnametab */
        .quad   0                       /* cutab */
        .quad   0                       /* filetab */
        .quad   pctab - hdr             /* pctab */
        .quad   pcln - hdr              /* pclntable */
        .else
        .if GOVER == 120
        .long   0xfffffff1              /* magic (Go 1.20) */
        .else
        .long   0xfffffff0              /* 0: magic (Go 1.18) */
        .endif
        .byte   0, 0, 1, 8              /* 4: pads, quantum, pointer size */
        .quad   2                       /* 8: nfunc */
        .quad   0                       /* 16: nfiles */
        .quad   fa                      /* 24: textStart */
        .quad   names - hdr             /* 32: funcnametab */
        .quad   0                       /* 40: cutab */
        .quad   0                       /* 48: filetab */
        .quad   pctab - hdr             /* 56: pctab */
        .quad   pcln - hdr              /* 64: pclntable */
        .endif
names:  .asciz  "main.a"                /* 72 */
        .asciz  "main.b"                /* 79 */
pctab:  .byte   0                       /* 86: (offset 0 is "no table") */
        .byte   0x02, 0x09, 0x00        /* 87: SP +1 for 9 bytes, end */
        .if GOVER == 116
        .balign 8
pcln:                                   /* entries of (entry, funcoff), pointers */
        .quad   fa, ra - pcln
        .quad   fb, rb - pcln
        .quad   fend                    /* the end */
ra:     .quad   fa                      /* entry; nameoff 0, args, deferreturn, pcsp 1, ... */
        .long   0, 0, 0, 1, 0, 0, 0, 0
        .byte   0, 0, 0, 0              /* funcID, pad, pad, nfuncdata */
rb:     .quad   fb
        .long   7, 0, 0, 1, 0, 0, 0, 0  /* nameoff 7 */
        .byte   0, 0, 0, 0
        .else
        .balign 4
pcln:                                   /* 92: entries of (entryoff, funcoff) */
        .long   0, ra - pcln            /* 92 */
        .long   fb - fa, rb - pcln      /* 100 */
        .long   fend - fa               /* 108: the end */
        .if GOVER == 120
ra:     .long   0, 0, 0, 0, 1, 0, 0, 0, 0, 0   /* entryoff, nameoff 0, ... pcsp 1, ..., startLine */
        .byte   0, 0, 0, 0              /* funcID, flag, pad, nfuncdata */
rb:     .long   fb - fa, 7, 0, 0, 1, 0, 0, 0, 0, 0
        .byte   0, 2, 0, 0              /* flag SPWRITE */
        .else
ra:     .long   0, 0, 0, 0, 1, 0, 0, 0, 0   /* 112: entryoff, nameoff 0, ... pcsp 1 */
        .byte   0, 0, 0, 0              /* funcID, flag, pad, nfuncdata */
rb:     .long   fb - fa, 7, 0, 0, 1, 0, 0, 0, 0   /* 152: nameoff 7 */
        .byte   0, 0, 0, 0
        .endif
        .endif
        .section .go.buildinfo, "aw"   /* (what makes it a Go image: a table must be found) */
        .ascii  "\377 Go buildinf:"
        .section .note.GNU-stack, "", @progbits
