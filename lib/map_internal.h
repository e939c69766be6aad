/* map_internal.h (internal): helpers shared by the mapping algorithms. */
#ifndef COMMAP_MAP_INTERNAL_H
#define COMMAP_MAP_INTERNAL_H
#endif
