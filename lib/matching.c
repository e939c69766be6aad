/* matching.c: placeholder, being written. */
