// File: model.h
//
// The domain gpucost reasons about, read top-down before any column:
//
//   Provider        who sells the GPU time (a cloud, a neocloud, yourself)
//   GpuModel        a GPU as the catalog names it ("H100 80GB")
//   InstanceType    what is bought: GPUs, their model and memory
//   Node            one machine of an instance type: the resource a bill names
//   MigProfile      how a MIG-capable GPU splits, and MigSlice / MigPartition,
//                   the slices one GPU is split into; MigProfile::Share turns
//                   a slice into a fraction of its GPU under a MigBasis
//   Purchase        how the time was bought (on-demand, spot, reserved,
//                   savings plan, ..., owned), with its PurchaseTerms
//   ChargeCategory  what a bill line is (FOCUS: usage, purchase, tax, ...)
//   CostLine        one line of a bill (SEMANTICS 1.1)
//   UsageSample     one telemetry sample: who held which GPU, how busy (1.3)
//   AllocationPolicy  how cost lines are prorated over samples (2-4)
//
// Every enum has one spelling per value, used in tables, configs and Python
// (gpucost.Purchase etc. are checked against these): ToString() writes it,
// Parse<Enum>() reads it (plus the aliases noted) and names the expected
// values when it cannot. The row types document the contract; the engine
// reads their columnar forms (columns.h: CostTable, SampleTable), built from
// rows by ToColumns.
//
// Example:
//   gpucost::CostLine line{.resource_id = "i-0abc", .start = h10, .end = h10 + gpucost::kNanosPerHour,
//                          .cost = 32.77, .purchase = gpucost::Purchase::kSpot};
//   gpucost::UsageSample sample{.timestamp = h10, .resource_id = "i-0abc", .device = 0,
//                               .consumer = "train-7", .util = 0.9};
//   // columns.h: gpucost::ToColumns(lines).columns() feeds gpucost::Allocate.
#ifndef GPUCOST_MODEL_H_
#define GPUCOST_MODEL_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpucost/time.h"

namespace gpucost {

// ---- who sells, what is bought ----------------------------------------------

// "aws", "gcp", "azure", "onprem" (hardware you own or lease), "other" (any
// other seller: a neocloud, a colocation provider). ParseProvider also reads
// FOCUS ProviderName spellings ("Amazon Web Services", "Microsoft", "Google
// Cloud", any case).
enum class Provider { kAws, kGcp, kAzure, kOnPrem, kOther };

// The canonical spelling of a provider name when it is a known one, else the
// name unchanged (FOCUS exports of other sellers keep their own name).
[[nodiscard]] std::string_view CanonicalProviderName(std::string_view name);

// A GPU as the catalog names it: the model and its memory, "A100 80GB".
struct GpuModel {
  std::string name;         // the catalog's spelling (CanonicalGpuModel, catalog.h)
  double memory_gib = 0;    // of one device
  bool mig_capable = false;

  friend bool operator==(const GpuModel&, const GpuModel&) = default;
};

// What a provider sells by the hour: one catalog row.
struct InstanceType {
  std::string provider;       // a Provider's spelling, or the user's own
  std::string instance_type;  // as the provider spells it: "p4d.24xlarge"
  std::string gpu_model;      // canonical model, "A100 40GB"; "" when none
  int gpus = 0;               // GPU devices the instance sees
  // Share of one physical GPU behind each device: 1, or e.g. 1/6 for Azure's
  // Standard_NV6ads_A10_v5.
  double gpu_fraction = 1.0;
  double gpu_memory_gib = 0;  // memory of one device
  int vcpus = 0;              // 0 = depends (GCP n1 + attached GPUs)
  double memory_gib = 0;      // 0 = depends
  bool mig_capable = false;
  // A reference On-Demand hourly price, where a citable source gives one.
  std::optional<double> on_demand_hourly;
  std::string price_region;
  std::string price_date;
  std::string price_source;
  // Nameplate power where a datasheet gives it (0: unknown): one GPU's TDP
  // and the node's maximum (owned nodes, owned.h), and where they come from.
  double gpu_tdp_w = 0;
  double node_max_power_w = 0;
  std::string spec_source;

  [[nodiscard]] GpuModel gpu() const { return {gpu_model, gpu_memory_gib, mig_capable}; }
};

// One machine: the resource a bill line names and telemetry reports on
// (`name`: the node or host name telemetry uses, "" when it is the id).
struct Node {
  std::string resource_id;  // "i-0abc", "projects/p/zones/z/instances/vm", a host
  std::string name;
  std::string instance_type;
  Provider provider = Provider::kOther;
  int gpus = 0;
};

// ---- how a GPU is split -----------------------------------------------------

// Which fraction of a GPU a MIG instance stands for: its compute slices of
// the GPU's total (the default), or its memory slices.
enum class MigBasis { kCompute, kMemory };

// One MIG profile of one GPU model (data/catalog/mig_profiles.csv).
struct MigProfile {
  std::string gpu_model;  // canonical model, "A100 80GB"
  std::string profile;    // "1g.10gb", "3g.40gb", "1g.10gb+me"
  int compute_slices = 0;
  int compute_total = 0;  // 7 (A100, H100, H200) or 4 (A30)
  int memory_slices = 0;
  int memory_total = 0;   // 8, or 4 on the A30
  double memory_gib = 0;  // the nominal size in the profile name

  // The fraction of the GPU one instance of this profile stands for: the one
  // place a slice becomes a share (1g.10gb on an A100: 1/7 compute, 1/8 memory).
  [[nodiscard]] double Share(MigBasis basis) const {
    return basis == MigBasis::kCompute ? static_cast<double>(compute_slices) / compute_total
                                       : static_cast<double>(memory_slices) / memory_total;
  }
};

// One MIG instance on a GPU device (DCGM's GPU_I_ID and GPU_I_PROFILE).
struct MigSlice {
  int32_t device = 0;
  int32_t instance = 0;  // GPU instance id
  std::string profile;   // "3g.40gb"
};

// The slices one GPU is split into.
struct MigPartition {
  std::string gpu_model;
  std::vector<MigSlice> slices;
};

// ---- how it was bought --------------------------------------------------------

// The purchase model of a cost line (CostLines::pricing spells it):
//   kOnDemand       list price by the hour                       "on_demand"
//   kSpot           spare capacity, interruptible (GCP preemptible, Azure
//                   spot, FOCUS "Dynamic")                       "spot"
//   kReserved       a reserved instance (AWS RI, Azure reservation)  "reserved"
//   kSavingsPlan    a spend commitment (AWS/Azure savings plan)  "savings_plan"
//   kCommittedUse   a GCP committed use discount                 "cud"
//   kCommitment     a commitment discount the export does not type
//                   (FOCUS "Committed" without a CommitmentDiscountType)  "commitment"
//   kCapacityBlock  capacity booked ahead for a fixed window     "capacity_block"
//   kOwned          hardware you own: depreciation, power, facility  "owned"
//   kLease          hardware leased for a term                   "lease"
//   kRateCard       a GPU cloud invoicing a rate per GPU- or node-hour  "rate_card"
//   kOther          fees, taxes, credits, anything else          "other"
// ParsePurchase also reads "on-demand", "ondemand", "reserved_instance",
// "ri", "sp", "committed_use" and "committed_use_discount" (any case).
enum class Purchase {
  kOnDemand,
  kSpot,
  kReserved,
  kSavingsPlan,
  kCommittedUse,
  kCommitment,
  kCapacityBlock,
  kOwned,
  kLease,
  kRateCard,
  kOther,
};

// Whether a purchase is a commitment discount (reserved, savings plan, CUD,
// untyped commitment): the lines commitment advice and coverage look at.
[[nodiscard]] constexpr bool IsCommitment(Purchase p) {
  return p == Purchase::kReserved || p == Purchase::kSavingsPlan || p == Purchase::kCommittedUse ||
         p == Purchase::kCommitment;
}

// How a commitment is paid for.
enum class Payment { kNoUpfront, kPartialUpfront, kAllUpfront };

// The terms of a purchase: what commitment advice compares and an owned
// node's cost model starts from. Zero where a term does not apply.
struct PurchaseTerms {
  Purchase purchase = Purchase::kOnDemand;
  int term_years = 0;          // 1 or 3 for commitments; service life when owned
  Payment payment = Payment::kNoUpfront;
  double hourly = 0;           // the rate per instance-hour (or GPU-hour, rate card)
  double upfront = 0;          // paid at the start: an all-upfront RI, a node's price
  bool flexible = false;       // applies across instance types (savings plans)
};

// ---- what a bill line is ----------------------------------------------------

// FOCUS ChargeCategory: "Usage", "Purchase", "Tax", "Credit", "Adjustment"
// (read in any case).
enum class ChargeCategory { kUsage, kPurchase, kTax, kCredit, kAdjustment };

// One bill line, SEMANTICS 1.1: `cost` for the resource's time in [start,
// end). The documentation-grade form; CostTable is its columnar form.
// SEMANTICS 9: what a cost line is prorated by. kGpuTime: the policy's basis
// (GPU time held or used); kEnergy: each holder's measured energy (a power or
// electricity line).
enum class CostDriver : uint8_t { kGpuTime, kEnergy };

struct CostLine {
  std::string resource_id;  // "" = a charge with no resource (a fee, a tax)
  int64_t start = 0;        // ns since the epoch, UTC
  int64_t end = 0;          // exclusive
  double cost = 0;
  double list_cost = 0;     // the On-Demand equivalent
  std::string currency;     // ISO 4217; "" = the bill's one currency
  Purchase purchase = Purchase::kOnDemand;
  ChargeCategory category = ChargeCategory::kUsage;
  bool primary = true;      // bills the resource's time (its GPU-hours count)
  // Instance-hours billed within [start, end); NaN: all of it.
  double quantity_hours = std::numeric_limits<double>::quiet_NaN();
  // SEMANTICS 9: what the line is prorated by (a power line: energy).
  CostDriver driver = CostDriver::kGpuTime;
};

// One telemetry sample, SEMANTICS 1.3: `consumer` held `share` of GPU
// `device` of `resource_id` for `duration` from `timestamp` (absent: the
// policy's interval), busy `util` of that time, using `mem_used` bytes.
struct UsageSample {
  int64_t timestamp = 0;    // ns since the epoch, UTC
  std::string resource_id;
  int32_t device = 0;
  std::string consumer;     // "" = the device (or slice) was free
  double share = 1.0;       // MigProfile::Share for a MIG slice
  double util = 0;          // in [0, 1]
  double mem_used = 0;      // bytes
  std::optional<int64_t> duration;  // ns
  // SEMANTICS 9: the whole device's draw in watts, on every row of the device
  // and instant; NaN: not measured.
  double power_w = std::numeric_limits<double>::quiet_NaN();
};

// ---- how money is prorated --------------------------------------------------

// The reserved consumer and label values of SEMANTICS 2-4.
inline constexpr std::string_view kIdle = "__idle__";
inline constexpr std::string_view kUnattributed = "__unattributed__";
inline constexpr std::string_view kUnobserved = "__unobserved__";
inline constexpr std::string_view kUnlabelled = "__unlabelled__";
// SEMANTICS 10: the part of a line when its resource was down (maintenance,
// a drained or failed node): neither a workload's nor idle.
inline constexpr std::string_view kDown = "__down__";

// What a consumer pays for (SEMANTICS 2): the GPU time it held ("allocated"),
// the time it kept the GPU busy ("used"), or a mix of GPU time and memory
// ("blended", weight `alpha`).
enum class Basis { kAllocated, kUsed, kBlended };

// What happens to idle cost (SEMANTICS 3): kept on "__idle__" ("keep") or
// spread over the line's consumers ("share").
enum class IdleMode { kKeep, kShare };

struct AllocationPolicy {
  Basis basis = Basis::kAllocated;
  double alpha = 0.5;  // blended weight of GPU time vs memory, in [0, 1]
  IdleMode idle = IdleMode::kKeep;
  // Seconds a sample stands for when the samples have no duration column;
  // absent: inferred from the timestamps (SEMANTICS 1.3; streaming: from the
  // first chunk without durations). Every series is checked against it.
  std::optional<double> interval_seconds;
  // Result groups: "consumer", "resource_id", "period", "cost_line" (one
  // group per cost line: its row in the cost table) or label columns of the
  // workloads table, in the order the result is sorted by.
  std::vector<std::string> by = {"consumer"};
  // Required when `by` contains "period".
  std::optional<PeriodFreq> freq;
  // SEMANTICS 9, with a power_w column: facility energy = energy * pue (the
  // data centre's power usage effectiveness, >= 1), and CO2e at a grid
  // intensity in gCO2e/kWh (a CarbonIntensityColumns table, when given to
  // Create, overrides it).
  std::optional<double> pue;
  std::optional<double> carbon_intensity;
  // Threads for adding samples (0 = AvailableCores()). Chunks under 256k
  // samples per thread use fewer. Rows are split between threads by
  // resource, so results are the same for every thread count, to the bit.
  int threads = 0;
  // Streaming (Allocator) only: the caller promises no chunk goes back in
  // time (days in order; a table sorted by time, sliced anywhere). A row can
  // then repeat one of an earlier chunk only at that chunk's newest instant,
  // so the allocator keeps only the rows there (16 bytes per sample
  // otherwise): memory is set by the chunk and the result. A row before an
  // earlier chunk's newest instant is an error naming it.
  bool ordered_chunks = false;
};

// ---- spellings ----------------------------------------------------------------

[[nodiscard]] std::string_view ToString(Provider value);
[[nodiscard]] std::string_view ToString(MigBasis value);
[[nodiscard]] std::string_view ToString(Purchase value);
[[nodiscard]] std::string_view ToString(Payment value);
[[nodiscard]] std::string_view ToString(ChargeCategory value);
[[nodiscard]] std::string_view ToString(Basis value);
[[nodiscard]] std::string_view ToString(IdleMode value);
[[nodiscard]] std::string_view ToString(CostDriver value);

// Each reads ToString's spelling (and the aliases noted above); anything else
// is kInvalidArgument naming the parameter and the expected values.
[[nodiscard]] absl::StatusOr<Provider> ParseProvider(std::string_view text);
[[nodiscard]] absl::StatusOr<MigBasis> ParseMigBasis(std::string_view text);
[[nodiscard]] absl::StatusOr<Purchase> ParsePurchase(std::string_view text);
[[nodiscard]] absl::StatusOr<Payment> ParsePayment(std::string_view text);
[[nodiscard]] absl::StatusOr<ChargeCategory> ParseChargeCategory(std::string_view text);
[[nodiscard]] absl::StatusOr<Basis> ParseBasis(std::string_view text);
[[nodiscard]] absl::StatusOr<IdleMode> ParseIdleMode(std::string_view text);
[[nodiscard]] absl::StatusOr<CostDriver> ParseCostDriver(std::string_view text);

// Every enum's spellings in value order, by the enum's name ("Purchase",
// "Basis", ...), and "Reserved", the reserved names kIdle ... kDown: what the
// Python enums are checked against.
struct EnumSpellings {
  std::string_view name;
  std::vector<std::string_view> values;
};
[[nodiscard]] std::vector<EnumSpellings> ModelEnumSpellings();

}  // namespace gpucost

#endif  // GPUCOST_MODEL_H_
