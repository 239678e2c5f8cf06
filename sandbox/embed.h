/* Files embedded in the handler at build time (.incbin): SBX_EMBED(name,
 * "path") defines name[] and name_end[]. The assembler reads the path
 * relative to the directory make runs in, the Makefile's, which lists
 * the file as a prerequisite of the object. */
#ifndef CODELLM_SANDBOX_EMBED_H
#define CODELLM_SANDBOX_EMBED_H

#define SBX_EMBED(name, path)						\
	__asm__(".section .rodata\n.balign 16\n" #name ":\n"		\
		".incbin \"" path "\"\n" #name "_end:\n.previous\n");	\
	extern const char name[] __asm__(#name);			\
	extern const char name##_end[] __asm__(#name "_end")

#endif
