/*
 * hybrid.h: decisions on top of the estimators: tile-size search (hyb_tile_*),
 * later fusion and what-if sweeps. See README "Source code layout".
 */
#ifndef HYBRID_H
#define HYBRID_H

#include "sim.h"

#endif /* HYBRID_H */
