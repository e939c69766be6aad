/* map_baseline.c: placeholder, being written. */
