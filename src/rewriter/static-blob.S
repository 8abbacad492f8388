/* The static runtime's blob (src/runtime/static, build-blob.sh), built
 * into kprewrite: it is copied into every static executable kprewrite
 * probes, and always matches the tables this kprewrite writes. */
        .section .rodata
        .p2align 6
        .globl  kprs_blob
kprs_blob:
        .incbin KPRS_BLOB
        .globl  kprs_blob_end
kprs_blob_end:
        .section .note.GNU-stack, "", @progbits
