/* Embeds http/debug-page.html (the assembler reads it; the path is
 * relative to the directory make runs in, the Makefile's). */
#include "http/debug-page.h"

__asm__(".section .rodata\n"
	".global debug_page\n"
	".type debug_page, @object\n"
	".balign 16\n"
	"debug_page:\n"
	".incbin \"http/debug-page.html\"\n"
	".global debug_page_end\n"
	".type debug_page_end, @object\n"
	"debug_page_end:\n"
	".byte 0\n"
	".previous\n");
