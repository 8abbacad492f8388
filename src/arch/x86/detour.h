/* Detour buffers for jump-optimized probes (user-space contract). */
#ifndef KPREWRITE_X86_DETOUR_H
#define KPREWRITE_X86_DETOUR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "decode.h"

struct detour_params {
    uint64_t at;              /* where the detour will live */
    uint64_t site;            /* the probe address */
    const uint8_t *dcr;       /* the original bytes of the DCR */
    unsigned dcr_len;
    uint64_t state;           /* this probe's struct kprw_state */
    uint64_t slot;            /* the pointer to the runtime's dispatcher */
    bool save_flags;          /* the arithmetic flags are live at the site */
    bool entry_aligned;       /* %rsp = 8 mod 16 at the site (function entry) */
    uint64_t ret_slot;        /* return probes (a function entry): the pointer to the
                                 runtime's return handler; 0 for a plain kprobe */
    uint64_t kret_slot;       /* return probes: the pointer to the runtime's return-probe
                                 entry (__kprewrite_kret_enter), or 0 in a pool that
                                 predates it: the detour then goes through slot */
    uint64_t kret_return_slot; /* return probes: the pointer to the runtime's return frame
                                 (__kprewrite_kret_return), which a hooked call's return
                                 jumps to; or 0 in a pool that predates it: the detour
                                 then carries the frame, which calls ret_slot. Always a
                                 pointer (read only after the entry took the call) */
    bool via_thunks;          /* slot and ret_slot are code to call (nop; call rel32), not
                                 pointers: thunks (x86_emit_slot_thunk) in an image the
                                 runtime was not linked into, whose slots the runtime fills
                                 when it loads; or, in a vmlinux, the dispatcher itself */
    bool kernel;              /* the kernel contract: no red zone, every general register
                                 saved in pt_regs (the dispatcher is plain C), the whole
                                 flags register recorded (IF matters), no return probes */
};

/* Largest detour: template + relocated DCR (jcc8 grows to 6, jmp8 to 5). */
#define DETOUR_MAX 512

/* Where the copy of each instruction of a DCR starts in the detour: off[k]
 * for the instruction at the DCR's byte k, 0xffff for bytes that start
 * none. A branch into the DCR may be re-pointed there. */
#define X86_COPY_MAX 32
struct x86_copy_map {
    uint16_t off[X86_COPY_MAX];
    /* no instruction needed relocating: the copy starts with the original
     * bytes (where an entry's original bytes can be read, KPRW_F_ORIG_AT_COPY) */
    bool verbatim;
};

/* Every emitter below that writes into `out` takes out NULL too: it then
 * writes nothing and only returns the length (and the offsets and map),
 * from the same code, so the same length. Lengths do not depend on the
 * addresses (a relocated jcc rel8 always becomes a rel32, a RIP-relative
 * operand keeps its size); only whether everything is in reach does. */

/* Writes the detour into out (DETOUR_MAX bytes). Returns its length, or 0
 * with a message in err when a relocated instruction is out of reach.
 * *dcr_off is where the relocated DCR starts: run from there, it is the
 * out-of-line copy of the whole DCR (ending with the jmp back), which the
 * int3 path of an unoptimized probe resumes at. With ret_slot set,
 * *hook_off is where the probed function returns when the dispatcher
 * answered that a return probe took the call (see detour.c). */
size_t x86_emit_detour(const struct detour_params *p, uint8_t *out, size_t *dcr_off, size_t *hook_off,
                       struct x86_copy_map *map, char *err, size_t errlen);

/* Shared detours (detour.c), each at most DETOUR_MAX bytes: a pool's
 * common body (at `at`, the flags saved or not) calling the dispatcher
 * through slot, and a probe's detour (a data word, a 10-byte head calling
 * common, the relocated DCR, the jmp back). The detour is entered at
 * at + *entry_off; *dcr_off is as for x86_emit_detour. Both return their
 * length, 0 (with err) when something is out of reach. */
size_t x86_emit_shared_common(uint64_t at, uint64_t slot, bool via_thunk, bool save_flags, uint8_t *out);
size_t x86_emit_shared_detour(uint64_t at, uint64_t site, const uint8_t *dcr, unsigned dcr_len, uint64_t state,
                              uint64_t common, uint8_t *out, size_t *entry_off, size_t *dcr_off,
                              struct x86_copy_map *map, char *err, size_t errlen);

/* A compact detour (a kprobe at a call entry: flags dead, red zone free):
 * a data word, a 6-byte call of the runtime's __kprewrite_enter through
 * the pointer at enter (or, via_thunk, the thunk at enter), the relocated
 * DCR and the jmp back. Entered at at + *entry_off; as the shared one
 * otherwise. */
size_t x86_emit_compact_detour(uint64_t at, uint64_t site, const uint8_t *dcr, unsigned dcr_len, uint64_t state,
                               uint64_t enter, bool via_thunk, uint8_t *out, size_t *entry_off, size_t *dcr_off,
                               struct x86_copy_map *map, char *err, size_t errlen);
/* The thunk of the compact detours' entry in an image the runtime was not
 * linked into: jumps through the slot, or returns (the hit is not counted)
 * while the slot is empty; clobbers only the flags. */
size_t x86_emit_enter_slot_thunk(uint64_t at, uint64_t slot, uint8_t *out);

/* The out-of-line copy of an int3 probe (OOL_MAX bytes): the instruction
 * of len bytes at site, relocated to at, then jmp to the next one (also the
 * stub of an evicted window: its instructions). 0 with err on failure.
 * x86_emit_ool_map also fills map. */
#define OOL_MAX 64
size_t x86_emit_ool(uint64_t at, uint64_t site, const uint8_t *code, unsigned len, uint8_t *out, char *err, size_t errlen);
size_t x86_emit_ool_map(uint64_t at, uint64_t site, const uint8_t *code, unsigned len, uint8_t *out,
                        struct x86_copy_map *map, char *err, size_t errlen);

/* The bytes written at the site: jmp rel32 to the detour, then int3 up to
 * dcr_len. Returns false when the detour is out of reach. */
bool x86_emit_site_jump(uint64_t site, uint64_t detour, unsigned dcr_len, uint8_t *out);
/* The same with a jmp rel8 to a trampoline (a function shorter than a
 * jmp rel32): false when tramp is out of rel8 reach or dcr_len < 2. */
bool x86_emit_site_jump8(uint64_t site, uint64_t tramp, unsigned dcr_len, uint8_t *out);
/* A trampoline: jmp rel32 from at to target (5 bytes). */
bool x86_emit_jmp32(uint64_t at, uint64_t target, uint8_t out[5]);
/* A window of len (>= 5) bytes evicted for trampolines: a jmp rel32 from
 * at to the stub running its instructions out of line, then int3 (where
 * the trampolines go). False when the stub is out of reach. */
bool x86_emit_evicted_window(uint64_t at, uint64_t stub, unsigned len, uint8_t *out);
/* n bytes of int3: the fill of unused pool text, the first byte of an
 * int3 probe's site. */
void x86_fill_int3(uint8_t *p, size_t n);
/* The direct branch insn (len bytes at from: jmp, jcc, loop) aimed at
 * target instead, into out (len bytes); false when out of its reach. */
bool x86_retarget(const uint8_t *insn, unsigned len, uint64_t from, uint64_t target, uint8_t *out);


/* The return trampoline of an image (RET_TRAMPOLINE_MAX bytes) at `at`,
 * calling the runtime's return handler through the pointer at slot.
 * Returns its length, 0 when slot is out of reach. */
#define RET_TRAMPOLINE_MAX 96
size_t x86_emit_ret_trampoline(uint64_t at, uint64_t slot, bool via_thunk, uint8_t *out);

/* A thunk (SLOT_THUNK_MAX bytes) that jumps through the pointer at slot, or
 * returns 0 in %rax while the slot is still empty (no relocation fills it:
 * the runtime does, when it finds the image). Clobbers %rax and the flags,
 * which the detour has saved. Returns its length, 0 when out of reach. */
#define SLOT_THUNK_MAX 32
size_t x86_emit_slot_thunk(uint64_t at, uint64_t slot, uint8_t *out);
/* The same for the return-probe entry, whose callers save nothing: it
 * clobbers only %r11 (0 while the slot is empty: the call is not taken)
 * and the flags. */
size_t x86_emit_kret_slot_thunk(uint64_t at, uint64_t slot, uint8_t *out);

#endif
