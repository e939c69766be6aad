/* map_refine.c: placeholder, being written. */
