/* test_map_refine.c: placeholder, being written. */
#include "tap.h"
int main(void) { return done_testing(); }
