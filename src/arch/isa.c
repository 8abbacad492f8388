/* The ISAs kprewrite knows (isa.h), by ELF machine. */
#include "isa.h"

extern const struct isa isa_x86_64;

static const struct isa *const isas[] = { &isa_x86_64 };

const struct isa *isa_for_machine(unsigned m)
{
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
        if (isas[i]->elf_machine == m)
            return isas[i];
    return NULL;
}

const char *isa_names(void)
{
    return isas[0]->name;   /* (one ISA so far; a second one joins the list here) */
}

const struct isa *isa_default(void)
{
    return isas[0];
}
