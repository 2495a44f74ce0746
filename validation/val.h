/*
 * val.h: measured datasets (val_dataset_*), accuracy metrics (val_metric_*)
 * and comparison reports (val_report_*). See README "Source code layout".
 */
#ifndef VAL_H
#define VAL_H

#include "hybrid.h"

#endif /* VAL_H */
