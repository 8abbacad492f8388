/* Read-only data that t/phdr.t's linker script places right after the
 * program header table, so that the table cannot grow over it: kprewrite
 * then writes a larger table at the end of the file. */
__attribute__((section(".kp_first"), used)) const char kp_first[64] = "placed right after the program header table";
