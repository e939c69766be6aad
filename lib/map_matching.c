/* map_matching.c: placeholder, being written. */
