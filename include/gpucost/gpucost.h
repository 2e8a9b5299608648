// File: gpucost.h
//
// Umbrella header: everything a C++ caller needs to prorate a bill over GPU
// usage. Read model.h first (the domain), then columns.h (its columnar
// forms), allocate.h (the engine), io/ (readers) and analyses/. A walk-through
// of a small service: docs/cpp.md.
#ifndef GPUCOST_GPUCOST_H_
#define GPUCOST_GPUCOST_H_

#include "gpucost/model.h"
#include "gpucost/allocate.h"
#include "gpucost/analyses/budget.h"
#include "gpucost/analyses/commitment.h"
#include "gpucost/analyses/idle.h"
#include "gpucost/analyses/profile.h"
#include "gpucost/catalog.h"
#include "gpucost/columns.h"
#include "gpucost/cores.h"
#include "gpucost/io/azure.h"
#include "gpucost/io/billing.h"
#include "gpucost/io/cur.h"
#include "gpucost/io/focus.h"
#include "gpucost/io/dcgm.h"
#include "gpucost/io/gcp.h"
#include "gpucost/io/hosts.h"
#include "gpucost/io/kubernetes.h"
#include "gpucost/io/prometheus.h"
#include "gpucost/io/usage.h"
#include "gpucost/owned.h"
#include "gpucost/status.h"
#include "gpucost/time.h"
#include "gpucost/version.h"

#endif  // GPUCOST_GPUCOST_H_
