/* detect_table.h: placeholder, being written. */
