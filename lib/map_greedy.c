/* map_greedy.c: placeholder, being written. */
