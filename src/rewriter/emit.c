/* The emit stage: a plan's code, sites and fixups at the pool's addresses. */
#include "emit.h"
#include "kind.h"
#include "../arch/isa.h"
#include "../arch/x86/decode.h"

#include <stdio.h>
#include <string.h>

void pool_addrs(const struct bake_plan *plan, const struct pool_sections *ps, struct pool_addrs *a)
{
    const struct plan_calls *c = &plan->calls;
    uint64_t slot = c->kernel ? 0 : ps->slot->addr;
    memset(a, 0, sizeof *a);
    a->text = ps->text->addr;
    a->data = ps->data->addr;
    a->slot = slot;
    a->dispatch = c->kernel ? ps->kernel_dispatch : slot + KPRW_SLOT_OFF(KPRW_SLOT_DISPATCH);
    if (!c->kernel)
        a->ret = slot + KPRW_SLOT_OFF(KPRW_SLOT_RETURN);
    if (c->kret)          /* a pool linked or added before the third slot: the old entry */
        a->kret = slot + KPRW_SLOT_OFF(KPRW_SLOT_KRET_ENTER);
    if (c->kret_return)   /* before the fourth: the detour carries the return frame */
        a->kret_return = slot + KPRW_SLOT_OFF(KPRW_SLOT_KRET_RETURN);
    if (c->enter)         /* before the fifth: no compact detours */
        a->enter = slot + KPRW_SLOT_OFF(KPRW_SLOT_ENTER);
    /* in an added pool the detours call thunks reading the slots */
    uint64_t *via[KPRW_NSLOTS] = { [KPRW_SLOT_DISPATCH] = &a->dispatch, [KPRW_SLOT_RETURN] = &a->ret,
                                   [KPRW_SLOT_KRET_ENTER] = &a->kret, [KPRW_SLOT_ENTER] = &a->enter };
    for (int th = 0; th < KPRW_NSLOTS; th++)
        if (plan->thunk[th] != PLAN_NONE && via[th])
            *via[th] = a->text + plan->thunk[th];
    for (int f = 0; f < 2; f++)
        a->common[f] = plan->common[f] != PLAN_NONE ? a->text + plan->common[f] : 0;
}

size_t emit_piece(const struct emit_env *env, const struct piece *pc, uint8_t *out, char *err, size_t errlen)
{
    const struct pool_addrs *a = &env->a;
    uint64_t at = a->text + pc->off;
    size_t len = 0;
    switch (pc->kind) {
    case PIECE_THUNK: {
        uint64_t slot = a->slot + KPRW_SLOT_OFF((uint64_t)pc->index);
        len = pc->index == KPRW_SLOT_KRET_ENTER ? x86_emit_kret_slot_thunk(at, slot, out)
            : pc->index == KPRW_SLOT_ENTER ? x86_emit_enter_slot_thunk(at, slot, out) : x86_emit_slot_thunk(at, slot, out);
        break;
    }
    case PIECE_COMMON:
        len = x86_emit_shared_common(at, a->dispatch, env->calls->added, pc->index == 1, out);
        break;
    case PIECE_RET_TRAMPOLINE:
        len = x86_emit_ret_trampoline(at, a->ret, env->calls->added, out);
        break;
    case PIECE_EVICT: {
        const struct eviction *ev = &env->probes->ev[pc->index];
        size_t avail;
        const uint8_t *orig = image_read(env->img, ev->at, &avail);
        char derr[200];
        len = orig && avail >= ev->len ? x86_emit_ool(at, ev->at, orig, ev->len, out, derr, sizeof derr) : 0;
        if (!len)
            snprintf(err, errlen, "%s: the window evicted at 0x%llx: %s", env->img->path, (unsigned long long)ev->at,
                     orig && avail >= ev->len ? derr : "not in the file");
        return len;
    }
    default:
        snprintf(err, errlen, "%s: internal error: piece kind %u", env->img->path, pc->kind);
        return 0;
    }
    if (!len)
        snprintf(err, errlen, "%s: %s is out of rel32 reach of %s", env->img->path, KPRW_SEC_SLOT, KPRW_SEC_TEXT);
    return len;
}

/* The detour of an optimized probe, or the out-of-line copy of an int3
 * one (and the site's bytes then: the instruction, int3 first). */
static size_t entry_body(const struct emit_env *env, const struct plan_entry *pe, size_t k, uint64_t at, uint8_t *out,
                         struct entry_info *ec, char *derr, size_t dlen)
{
    const struct probe *p = &env->probes->v[pe->probe];
    const struct pool_addrs *a = &env->a;
    uint64_t state = a->data + k * sizeof(struct kprw_state);
    size_t avail;
    const uint8_t *orig = image_read(env->img, p->addr, &avail);
    /* the instructions; the site's bytes may reach into padding */
    unsigned len = p->code_len ? p->code_len : p->dcr_len;
    switch (pe->code) {
    case CODE_COMPACT:
        return x86_emit_compact_detour(at, p->addr, orig, len, state, a->enter, env->calls->added, out, &ec->entry_off,
                                       &ec->dcr_off, &ec->map, derr, dlen);
    case CODE_SHARED:
        return x86_emit_shared_detour(at, p->addr, orig, len, state, a->common[(p->notes & NOTE_FLAGS_SAVED) != 0], out,
                                      &ec->entry_off, &ec->dcr_off, &ec->map, derr, dlen);
    case CODE_DETOUR: {
        struct detour_params dp = {
            .at = at, .site = p->addr, .dcr = orig, .dcr_len = len, .state = state,
            .slot = a->dispatch, .save_flags = (p->notes & NOTE_FLAGS_SAVED) != 0,
            .entry_aligned = p->entry_aligned,
            /* return probes are at function entries: no live flags (ABI);
             * a kernel has no return slot (a->ret 0): its return probes'
             * detours are its kprobes', the runtime hooks the return */
            .ret_slot = p->is_return ? a->ret : 0,
            .kret_slot = p->is_return ? a->kret : 0,
            .kret_return_slot = p->is_return ? a->kret_return : 0,
            .via_thunks = env->calls->added || env->calls->kernel,
            .kernel = env->calls->kernel,
        };
        size_t n = x86_emit_detour(&dp, out, &ec->dcr_off, &ec->hook_off, &ec->map, derr, dlen);
        if (!p->is_return)
            ec->hook_off = 0;
        return n;
    }
    default: {
        /* int3 at byte 0; the runtime's SIGTRAP handler resumes at the
         * out-of-line copy of the first instruction */
        struct x86_insn in;
        ec->site_len = x86_decode(orig, avail, p->addr, &in);
        if (!ec->site_len) {
            snprintf(derr, dlen, "undecodable instruction at 0x%llx", (unsigned long long)p->addr);
            return 0;
        }
        memcpy(ec->site, orig, ec->site_len);
        /* a kernel boots with its int3 probes disarmed: an int3 met before
         * the runtime hooks the trap would oops; it arms them */
        if (!env->calls->kernel)
            x86_fill_int3(ec->site, 1);
        return x86_emit_ool_map(at, p->addr, orig, ec->site_len, out, &ec->map, derr, dlen);
    }
    }
}

size_t emit_entry(const struct emit_env *env, const struct plan_entry *pe, size_t k, size_t off, uint8_t *out,
                  struct entry_info *ec, char *err, size_t errlen)
{
    const struct probe *p = &env->probes->v[pe->probe];
    uint64_t at = env->a.text + off;
    char derr[200];
    memset(ec, 0, sizeof *ec);
    ec->site_len = p->dcr_len;
    size_t len = entry_body(env, pe, k, at, out, ec, derr, sizeof derr);
    /* the site's jump: to the detour, or (a short site) to a trampoline
     * in padding that jumps there */
    if (len && p->verdict == V_OPTIMIZED &&
        !((p->notes & NOTE_JUMP8) ? x86_emit_site_jump8(p->addr, p->tramp, p->dcr_len, ec->site)
                                  : x86_emit_site_jump(p->addr, at + ec->entry_off, p->dcr_len, ec->site))) {
        snprintf(derr, sizeof derr, "the pool is out of jump reach");
        len = 0;
    }
    if (len && !image_file_offset(env->img, p->addr, ec->site_len, &ec->site_file_off)) {
        snprintf(derr, sizeof derr, "the site has no bytes in the file");
        len = 0;
    }
    if (!len)
        snprintf(err, errlen, "%s: %s+0x%llx: %s", env->img->path, p->sym, (unsigned long long)p->off, derr);
    return len;
}

bool fixup_bytes(const struct emit_env *env, const struct plan_fixup *f, uint8_t *out, char *err, size_t errlen)
{
    uint64_t to = f->to_text ? env->a.text + f->target : f->target;
    size_t avail;
    const uint8_t *orig;
    bool ok = false;
    switch (f->how) {
    case FIX_JMP32:
        ok = x86_emit_jmp32(f->at, to, out);
        break;
    case FIX_WINDOW:
        ok = x86_emit_evicted_window(f->at, to, f->len, out);
        break;
    case FIX_BRANCH:
        orig = image_read(env->img, f->at, &avail);
        ok = orig && avail >= f->len && x86_retarget(orig, f->len, f->at, to, out);
        break;
    case FIX_TABLE4: {
        int64_t v = (int64_t)(to - f->base);
        int32_t v32 = (int32_t)v;
        orig = image_read(env->img, f->at, &avail);
        ok = orig && avail >= f->len && v == v32;
        memcpy(out, &v32, 4);
        break;
    }
    case FIX_TABLE8:
        orig = image_read(env->img, f->at, &avail);
        ok = orig && avail >= f->len;
        memcpy(out, &to, 8);
        break;
    }
    if (ok)
        return true;
    const struct probe *p = f->probe != SIZE_MAX ? &env->probes->v[f->probe] : NULL;
    if (!p)
        snprintf(err, errlen, "%s: the window evicted at 0x%llx: the pool is out of jump reach", env->img->path,
                 (unsigned long long)f->at);
    else if (!f->branch)
        snprintf(err, errlen, "%s: %s+0x%llx: the trampoline is out of reach of the pool", env->img->path, p->sym,
                 (unsigned long long)p->off);
    else
        snprintf(err, errlen, "%s: %s+0x%llx: the %s at 0x%llx cannot reach the DCR's copy", env->img->path, p->sym,
                 (unsigned long long)p->off, f->kind == KPRW_FIX_TABLE ? "table entry" : "branch",
                 (unsigned long long)f->branch);
    return false;
}

/* What the plan said an entry's code would be, and what it is. */
static bool same_code(const struct plan_entry *pe, size_t len, size_t planned, const struct entry_info *ec)
{
    return len == planned && ec->entry_off == pe->entry_off && ec->dcr_off == pe->dcr_off &&
           ec->hook_off == pe->hook_off && ec->site_len == pe->site_len;
}

/* The entry's code into the text at its place, its site's bytes into the
 * file; the plan's lengths and offsets, and its word that the copy holds
 * the original bytes, checked against the bytes. */
/* Each boot-patched site of the DCR (KPRW_T_FOLLOW) is copied so that the
 * kernel, which will find it where its table entry now points, patches it
 * as it would the site: a return site as the same jmp to the same target,
 * an alternative byte for byte. */
static int follow_check(const struct emit_env *env, const struct plan_entry *pe, const struct probe *p,
                        const uint8_t *orig, const uint8_t *det, size_t len, uint64_t det_at, char *err, size_t errlen)
{
    for (unsigned k = 0; k < KPRW_FOLLOW_PER_ENTRY && pe->follow[k].len; k++) {
        const struct kprw_follow *fw = &pe->follow[k];
        size_t at = pe->dcr_off + fw->copy_off;
        struct x86_insn a, b;
        bool same = fw->dcr_off + fw->len <= pe->site_len && at + fw->len <= len;
        if (same && fw->kind == KPRW_FOLLOW_COPY)
            same = memcmp(orig + fw->dcr_off, det + at, fw->len) == 0;
        /* instruction by instruction: the same lengths and kinds, the same
         * targets, the same bytes but the operands re-aimed */
        for (unsigned o = 0, n = 0; same && o < fw->len; o += n) {
            const uint8_t *x = orig + fw->dcr_off + o, *y = det + at + o;
            uint64_t xa = p->addr + fw->dcr_off + o, ya = det_at + at + o;
            n = x86_decode(x, fw->len - o, xa, &a);
            same = n && x86_decode(y, fw->len - o, ya, &b) == n && a.kind == b.kind && a.flags == b.flags;
            if (same && x86_has_target(&a))
                same = a.target == b.target && memcmp(x, y, n - 4) == 0;
            else if (same && (a.flags & XF_RIPREL)) {
                int32_t dx, dy;
                memcpy(&dx, x + a.disp_off, 4);
                memcpy(&dy, y + a.disp_off, 4);
                same = a.disp_off == b.disp_off && xa + n + (int64_t)dx == ya + n + (int64_t)dy &&
                       memcmp(x, y, a.disp_off) == 0 && memcmp(x + a.disp_off + 4, y + a.disp_off + 4, n - a.disp_off - 4) == 0;
            } else if (same)
                same = memcmp(x, y, n) == 0;
        }
        if (!same) {
            snprintf(err, errlen, "%s: %s+0x%llx: internal error: the boot-patched site at DCR byte %u is not "
                     "copied as the kernel would find it", env->img->path, p->sym, (unsigned long long)p->off,
                     fw->dcr_off);
            return -1;
        }
    }
    return 0;
}

static int write_entry(const struct emit_env *env, const struct bake_plan *plan, const struct piece *pc,
                       uint8_t *out, uint8_t *text, char *err, size_t errlen)
{
    const struct plan_entry *pe = &plan->entries[pc->index];
    const struct probe *p = &env->probes->v[pe->probe];
    const struct kind_hooks *k = env->img->hooks;
    size_t avail;
    uint8_t det[DETOUR_MAX > OOL_MAX ? DETOUR_MAX : OOL_MAX];
    struct entry_info ec;
    size_t len = emit_entry(env, pe, pc->index, pc->off, det, &ec, err, errlen);
    if (!len)
        return -1;
    const uint8_t *orig = image_read(env->img, p->addr, &avail);
    bool at_copy = !env->calls->kernel && len >= pe->dcr_off + ec.site_len &&
                   memcmp(det + pe->dcr_off, orig, ec.site_len) == 0;
    if (!same_code(pe, len, pc->len, &ec) || at_copy != pe->at_copy) {
        snprintf(err, errlen, "%s: %s+0x%llx: internal error: the code is not what was planned (%zu bytes, %zu planned)",
                 env->img->path, p->sym, (unsigned long long)p->off, len, pc->len);
        return -1;
    }
    if (follow_check(env, pe, p, orig, det, len, env->a.text + pc->off, err, errlen) < 0)
        return -1;
    memcpy(text + pc->off, det, len);
    memcpy(out + ec.site_file_off, ec.site, ec.site_len);
    /* relocations in the DCR the kind moves to the copy (a vmlinux's KASLR
     * relocations) */
    if ((p->notes & NOTE_RELOC_MOVED) &&
        (!env->relocs || k->relocs_move(env->relocs, env->img, p, det, len, env->a.text + pc->off, &ec.map, out,
                                        err, errlen) < 0)) {
        if (!env->relocs)
            snprintf(err, errlen, "%s: %s+0x%llx: internal error: no relocations to move", env->img->path, p->sym,
                     (unsigned long long)p->off);
        return -1;
    }
    return 0;
}

/* The pieces of the plan into the pool's text in out. */
static int emit_pieces(const struct emit_env *env, const struct bake_plan *plan, const struct pool_sections *ps,
                       uint8_t *out, char *err, size_t errlen)
{
    const struct image *img = env->img;
    uint8_t *text = out + ps->text->offset;
    img->isa->fill(text, ps->text->size);
    for (size_t i = 0; i < plan->npieces; i++) {
        const struct piece *pc = &plan->pieces[i];
        if (pc->off + pc->len > ps->text->size) {
            snprintf(err, errlen, "%s: internal error: the pool's text is smaller than planned", img->path);
            return -1;
        }
        if (pc->kind == PIECE_ENTRY) {
            if (write_entry(env, plan, pc, out, text, err, errlen) < 0)
                return -1;
        } else {
            uint8_t code[DETOUR_MAX];
            size_t len = emit_piece(env, pc, code, err, errlen);
            if (!len)
                return -1;
            if (len != pc->len) {
                snprintf(err, errlen, "%s: internal error: a piece of the pool came out %zu bytes, %zu planned",
                         img->path, len, pc->len);
                return -1;
            }
            memcpy(text + pc->off, code, len);
        }
        for (size_t k = pc->fix; k < pc->fix + pc->nfix; k++) {
            const struct plan_fixup *f = &plan->fixups[k];
            uint8_t b[KPRW_ORIG_MAX];
            size_t off;
            if (!fixup_bytes(env, f, b, err, errlen))
                return -1;
            if (!image_file_offset(img, f->at, f->len, &off)) {
                snprintf(err, errlen, "%s: 0x%llx: the bytes to re-point are not in the file", img->path,
                         (unsigned long long)f->at);
                return -1;
            }
            memcpy(out + off, b, f->len);
        }
    }
    return 0;
}

int emit_image(const struct image *img, const struct pool_sections *ps, const struct probe_list *probes,
               const struct bake_plan *plan, uint8_t *out, char *err, size_t errlen)
{
    struct emit_env env = { img, probes, &plan->calls, { 0 }, NULL };
    struct plan_calls now = plan_calls_of(img, ps);
    if (now.kernel != plan->calls.kernel || now.added != plan->calls.added || now.kret != plan->calls.kret ||
        now.kret_return != plan->calls.kret_return || now.enter != plan->calls.enter || now.shared != plan->calls.shared) {
        snprintf(err, errlen, "%s: internal error: the pool is not the one the probes were planned for", img->path);
        return -1;
    }
    pool_addrs(plan, ps, &env.a);
    const struct kind_hooks *k = img->hooks;
    void *relocs = NULL;
    for (size_t i = 0; i < probes->n && !relocs && k->relocs_open; i++)
        if (probes->v[i].verdict == V_OPTIMIZED && (probes->v[i].notes & NOTE_RELOC_MOVED)) {
            if (k->relocs_open(img, &relocs, err, errlen) < 0)
                return -1;
            env.relocs = relocs;
        }
    int rc = emit_pieces(&env, plan, ps, out, err, errlen);
    if (relocs)
        k->relocs_close(relocs);
    return rc;
}
