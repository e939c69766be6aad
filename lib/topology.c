/* topology.c: placeholder, being written. */
