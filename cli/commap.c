/* commap.c: placeholder, being written. */
#include <stdio.h>
int main(void) { fputs("commap: not yet built\n", stderr); return 1; }
