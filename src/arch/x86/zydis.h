/* The x86 layer's one Zydis decoder: only src/arch/x86 uses Zydis. */
#ifndef KPREWRITE_X86_ZYDIS_H
#define KPREWRITE_X86_ZYDIS_H
#include <Zydis/Zydis.h>

/* 64-bit long mode, 64-bit stack: set up at the first call (decode.c). */
const ZydisDecoder *x86_zydis_decoder(void);
#endif
