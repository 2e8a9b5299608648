// showback: what each Kubernetes namespace (or pod) cost on the GPUs of one
// cloud bill, from the bill and dcgm-exporter scrapes. It is built against an
// installed gpucost and uses only its public headers; docs/cpp.md walks
// through it, README.md beside it says how to run it.
//
//   showback --bill FILE [--format cur|focus] [--node NODE=RESOURCE_ID]...
//            [--by namespace|pod|consumer[,...]] [--basis allocated|used|blended]
//            [--idle keep|share] SCRAPE.prom|DIR...
//
// Prints one row per group (cost, GPU-hours held, idle cost) and a total
// that equals the bill's GPU cost. An error prints the library's message
// and exits 1; a bad command line exits 2.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpucost/gpucost.h"  // engine, catalog, bill readers, status macros
#include "gpucost/io/dcgm.h"
#include "gpucost/io/hosts.h"  // ParseLocalTime
#include "gpucost/io/prometheus.h"

namespace {

namespace fs = std::filesystem;
using gpucost::io::BillingFormat;

constexpr char kUsage[] =
    "usage: showback --bill FILE [--format cur|focus] [--node NODE=RESOURCE_ID]...\n"
    "                [--by namespace|pod|consumer[,...]] [--basis allocated|used|blended]\n"
    "                [--idle keep|share] SCRAPE.prom|DIR...\n";

struct Args {
  std::string bill;
  std::optional<BillingFormat> format;          // nullopt: told by the bill's header
  std::vector<std::string> nodes, resource_ids;  // --node pairs: Kubernetes node -> bill resource
  std::vector<std::string> scrapes;              // files or folders of *.prom
  gpucost::AllocationPolicy policy;
};

absl::Status Usage(const std::string& what) { return absl::InvalidArgumentError(what + "\n" + kUsage); }

absl::StatusOr<Args> ParseArgs(std::span<char* const> argv) {
  Args args;
  args.policy.by = {"namespace"};
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string_view flag = argv[i];
    if (!flag.starts_with("--")) {
      args.scrapes.emplace_back(flag);
      continue;
    }
    if (i + 1 == argv.size()) return Usage(std::string(flag) + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--bill") {
      args.bill = value;
    } else if (flag == "--format" && (value == "cur" || value == "focus")) {
      args.format = value == "cur" ? BillingFormat::kCur : BillingFormat::kFocus;
    } else if (flag == "--node" && value.find('=') != std::string::npos) {
      args.nodes.push_back(value.substr(0, value.find('=')));
      args.resource_ids.push_back(value.substr(value.find('=') + 1));
    } else if (flag == "--by") {
      args.policy.by.clear();
      for (size_t from = 0; from <= value.size();) {
        const size_t comma = std::min(value.find(',', from), value.size());
        args.policy.by.push_back(value.substr(from, comma - from));
        from = comma + 1;
      }
    } else if (flag == "--basis") {
      GPUCOST_ASSIGN_OR_RETURN(args.policy.basis, gpucost::ParseBasis(value));
    } else if (flag == "--idle") {
      GPUCOST_ASSIGN_OR_RETURN(args.policy.idle, gpucost::ParseIdleMode(value));
    } else {
      return Usage("bad option " + std::string(flag) + " " + value);
    }
  }
  if (args.bill.empty() || args.scrapes.empty()) return Usage("give a bill and at least one scrape");
  return args;
}

// The bill's format from its header line: FOCUS columns are CamelCase
// (ChargePeriodStart), CUR 2.0's snake_case, the legacy CUR's "lineItem/...".
absl::StatusOr<BillingFormat> SniffFormat(std::string_view head, const std::string& path) {
  const std::string_view header = head.substr(0, head.find('\n'));
  if (header.find("ChargePeriodStart") != std::string_view::npos) return BillingFormat::kFocus;
  if (header.find("line_item_usage_start_date") != std::string_view::npos ||
      header.find("lineItem/UsageStartDate") != std::string_view::npos) {
    return BillingFormat::kCur;
  }
  return gpucost::TableError(path, "line 1 is neither a FOCUS header (ChargePeriodStart) nor an AWS CUR one "
                                  "(line_item_usage_start_date); give --format");
}

// Step 1: the bill, streamed through the reader in 1 MiB chunks (memory
// grows with the cost lines, not with the file).
absl::StatusOr<gpucost::io::CostLines> ReadBill(const Args& args) {
  std::ifstream in(args.bill, std::ios::binary);
  if (!in) return absl::NotFoundError(args.bill + ": cannot open");
  std::string chunk(size_t{1} << 20, '\0');
  auto read = [&] {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    return std::string_view(chunk.data(), static_cast<size_t>(in.gcount()));
  };
  std::string_view bytes = read();
  BillingFormat format = BillingFormat::kCur;
  if (args.format) {
    format = *args.format;
  } else {
    GPUCOST_ASSIGN_OR_RETURN(format, SniffFormat(bytes, args.bill));
  }
  gpucost::io::BillingOptions options;  // the effective (amortized) amount, the embedded catalog
  options.source = args.bill;
  GPUCOST_ASSIGN_OR_RETURN(auto reader, gpucost::io::BillingReader::Create(format, options));
  for (; !bytes.empty(); bytes = read()) GPUCOST_RETURN_IF_ERROR(reader->FeedCsv(bytes));
  if (in.bad()) return reader->FailAtInputPosition("read error");
  return reader->Finish();
}

// Step 2: the bill's GPU lines (the reader's `gpu` column: the lines of
// resources whose instance type has GPUs) as the engine's cost columns.
// Storage, taxes and other lines are not GPU cost and stay out.
struct GpuLines {
  std::vector<int32_t> resource_id, currency;
  std::vector<int64_t> start, end;
  std::vector<double> cost, list_cost, quantity_hours;
  std::vector<uint8_t> primary;
};

GpuLines SelectGpuLines(const gpucost::io::CostLines& lines) {
  GpuLines out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines.gpu[i] == 0) continue;
    out.resource_id.push_back(lines.resource_id.codes[i]);
    out.currency.push_back(lines.currency.codes[i]);
    out.start.push_back(lines.start[i]);
    out.end.push_back(lines.end[i]);
    out.cost.push_back(lines.cost[i]);
    out.list_cost.push_back(lines.list_cost[i]);
    out.quantity_hours.push_back(lines.quantity_hours[i]);
    out.primary.push_back(lines.primary[i]);
  }
  return out;
}

// The engine's view of `gpu`, whose codes index `lines`' dictionaries. Unlike
// CostLines::columns(), it passes currency, primary and quantity_hours too, so
// results are per currency and only the instance-hour lines count GPU-hours.
gpucost::CostColumns CostColumnsOf(const GpuLines& gpu, const gpucost::io::CostLines& lines) {
  return {.resource_id = {gpu.resource_id, lines.resource_id.value_views},
          .start = gpu.start,
          .end = gpu.end,
          .cost = gpu.cost,
          .list_cost = gpu.list_cost,
          .currency = gpucost::StringColumn{gpu.currency, lines.currency.value_views},
          .primary = gpu.primary,
          .quantity_hours = gpu.quantity_hours};
}

// dcgm-exporter prints no timestamps: a saved scrape carries its instant in
// its name, as "<anything>_20250301T101500Z.prom" (UTC). nullopt when the
// name has none; then every line needs its own timestamp.
absl::StatusOr<std::optional<int64_t>> ScrapeInstant(const fs::path& path) {
  const std::string name = path.filename().string();
  auto digits = [&](size_t at, size_t n) {
    const std::string_view part = std::string_view(name).substr(at, n);
    return std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  for (size_t at = 0; at + 16 <= name.size(); ++at) {
    if (digits(at, 8) && name[at + 8] == 'T' && digits(at + 9, 6) && name[at + 15] == 'Z') {
      const std::string civil = name.substr(at, 4) + "-" + name.substr(at + 4, 2) + "-" + name.substr(at + 6, 2) +
                                "T" + name.substr(at + 9, 2) + ":" + name.substr(at + 11, 2) + ":" +
                                name.substr(at + 13, 2);
      GPUCOST_ASSIGN_OR_RETURN(int64_t instant, gpucost::ParseLocalTime(civil, "UTC"));
      return instant;
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path.string() + ": cannot open");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Step 3: the scrapes (files, or folders of *.prom files), parsed to
// Prometheus series. Only the metrics the DCGM reader uses are kept.
absl::StatusOr<gpucost::PromSamples> ReadScrapes(const std::vector<std::string>& args) {
  std::vector<fs::path> files;
  for (const fs::path arg : args) {
    if (!fs::is_directory(arg)) {
      files.push_back(arg);
      continue;
    }
    const size_t before = files.size();
    for (const fs::directory_entry& entry : fs::directory_iterator(arg)) {
      if (entry.is_regular_file() && entry.path().extension() == ".prom") files.push_back(entry.path());
    }
    if (files.size() == before) return absl::NotFoundError(arg.string() + ": no .prom files in the folder");
    std::sort(files.begin() + static_cast<std::ptrdiff_t>(before), files.end());
  }
  const std::vector<std::string_view> metrics = gpucost::DcgmMetricNames();
  gpucost::PromSamples all;
  for (const fs::path& file : files) {
    GPUCOST_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
    GPUCOST_ASSIGN_OR_RETURN(std::optional<int64_t> instant, ScrapeInstant(file));
    GPUCOST_ASSIGN_OR_RETURN(gpucost::PromSamples one,
                             gpucost::ParseExposition(text, file.string(), instant, metrics));
    all.Append(std::move(one));
  }
  return all;
}

// Step 5: the workloads table (SEMANTICS 1.4) the engine groups by. The
// DCGM reader names each consumer "namespace/pod"; its two parts become the
// labels `namespace` and `pod`. "" (a free GPU) is nobody and has no row.
struct Workloads {
  gpucost::EncodedStrings consumer, ns, pod;

  [[nodiscard]] gpucost::WorkloadColumns columns() const {
    return {consumer.view(), {{"namespace", ns.view()}, {"pod", pod.view()}}};
  }
};

Workloads WorkloadsOf(const gpucost::UsageSamples& samples) {
  std::vector<std::string_view> consumer, ns, pod;
  for (std::string_view name : samples.consumer.value_views) {
    const size_t slash = name.find('/');
    if (slash == std::string_view::npos) continue;  // not a pod: __unlabelled__ in the result
    consumer.push_back(name);
    ns.push_back(name.substr(0, slash));
    pod.push_back(name.substr(slash + 1));
  }
  return {gpucost::EncodeStrings(std::span<const std::string_view>(consumer)),
          gpucost::EncodeStrings(std::span<const std::string_view>(ns)),
          gpucost::EncodeStrings(std::span<const std::string_view>(pod))};
}

// Step 7: the table, a total per currency, and the check that each total is
// what the bill's GPU lines cost: money in equals money out.
absl::Status Print(const gpucost::Allocation& result, const GpuLines& gpu, const gpucost::io::CostLines& lines) {
  const std::vector<gpucost::KeyColumn>& keys = result.keys;  // the --by columns, then "currency"
  auto value = [&](size_t k, size_t row) -> const std::string& { return keys[k].dictionary[keys[k].codes[row]]; };
  size_t currency = keys.size();  // the currency key's index; keys.size() when the bill has no currencies
  std::vector<int> width;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (keys[k].name == "currency") currency = k;
    size_t w = std::max<size_t>(keys[k].name.size(), 5);  // "total"
    for (const std::string& v : keys[k].dictionary) w = std::max(w, v.size());
    width.push_back(static_cast<int>(w));
  }
  auto cells = [&](auto&& text) {
    for (size_t k = 0; k < keys.size(); ++k) std::printf("%-*s  ", width[k], std::string(text(k)).c_str());
  };

  struct Total {
    double cost = 0, gpu_hours = 0, idle_cost = 0, billed = 0;
  };
  std::map<std::string, Total> totals;  // by currency
  cells([&](size_t k) { return keys[k].name; });
  std::printf("%12s %10s %12s\n", "cost", "gpu_hours", "idle_cost");
  for (size_t i = 0; i < result.size(); ++i) {
    cells([&](size_t k) { return value(k, i); });
    std::printf("%12.4f %10.2f %12.4f\n", result.cost[i], result.gpu_hours[i], result.idle_cost[i]);
    Total& total = totals[currency < keys.size() ? value(currency, i) : ""];
    total.cost += result.cost[i];
    total.gpu_hours += result.gpu_hours[i];
    total.idle_cost += result.idle_cost[i];
  }
  for (size_t i = 0; i < gpu.cost.size(); ++i) {
    const bool named = currency < keys.size() && gpu.currency[i] != gpucost::kNullCode;
    totals[named ? lines.currency.values[gpu.currency[i]] : ""].billed += gpu.cost[i];
  }
  for (const auto& entry : totals) {
    const std::string& name = entry.first;
    const Total& total = entry.second;
    cells([&](size_t k) { return k == 0 ? std::string("total") : k == currency ? name : ""; });
    std::printf("%12.4f %10.2f %12.4f\n", total.cost, total.gpu_hours, total.idle_cost);
    if (std::abs(total.cost - total.billed) > 1e-9 * std::max(1.0, std::abs(total.billed))) {
      return absl::InternalError("allocated " + std::to_string(total.cost) + " " + name +
                                 " but the bill's GPU lines cost " + std::to_string(total.billed));
    }
  }
  return absl::OkStatus();
}

absl::Status Run(const Args& args) {
  // 1-2: the bill, its GPU lines, and one inventory row per GPU of each
  // resource, from its instance type in the embedded catalog.
  GPUCOST_ASSIGN_OR_RETURN(gpucost::io::CostLines lines, ReadBill(args));
  const GpuLines gpu = SelectGpuLines(lines);
  gpucost::InventoryOptions inventory_options;
  inventory_options.table = args.bill;
  inventory_options.skip_missing_instance_type = true;  // a GPU instance's other lines (transfer) name none
  GPUCOST_ASSIGN_OR_RETURN(gpucost::Inventory inventory,
                           gpucost::BuildInventory(lines.resource_id.view(), lines.instance_type.view(),
                                                   gpucost::Catalog::Embedded(), lines.gpu, inventory_options));

  // 3-4: the scrapes, then usage samples: the node (Hostname label) mapped to
  // the bill's resource id, consumer "namespace/pod", time-sliced pods 1/k of
  // their GPU, each sample lasting until its series' next scrape.
  GPUCOST_ASSIGN_OR_RETURN(gpucost::PromSamples series, ReadScrapes(args.scrapes));
  const gpucost::EncodedStrings nodes = gpucost::EncodeStrings(std::span<const std::string>(args.nodes));
  const gpucost::EncodedStrings ids = gpucost::EncodeStrings(std::span<const std::string>(args.resource_ids));
  gpucost::DcgmOptions dcgm;
  if (!args.nodes.empty()) {  // none: node names are the bill's resource ids (on-premises hosts)
    dcgm.nodes_node = nodes.view();
    dcgm.nodes_resource_id = ids.view();
  }
  GPUCOST_ASSIGN_OR_RETURN(gpucost::DcgmUsage usage, gpucost::DcgmToUsage(series, dcgm));

  // 5-6: workloads from the consumer names, then the allocation.
  const Workloads workloads = WorkloadsOf(usage.samples);
  const gpucost::WorkloadColumns workload_columns = workloads.columns();
  GPUCOST_ASSIGN_OR_RETURN(gpucost::Allocation result,
                           gpucost::Allocate(CostColumnsOf(gpu, lines), usage.columns(), inventory.columns(),
                                             &workload_columns, args.policy));

  // 7: the table.
  std::printf("%s: %zu lines, %zu of GPU instances (%zu GPUs); %zu scrape samples\n\n", args.bill.c_str(),
              lines.size(), gpu.cost.size(), inventory.size(), usage.size());
  GPUCOST_RETURN_IF_ERROR(Print(result, gpu, lines));
  const gpucost::Diagnostics& d = result.diagnostics;
  std::printf("\nlines unobserved (no scrape of their node): %lld; samples of nodes not on the bill: %lld\n",
              static_cast<long long>(d.lines_unobserved), static_cast<long long>(d.samples_unknown_resource));
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<Args> args = ParseArgs(std::span<char* const>(argv, static_cast<size_t>(argc)));
  absl::Status status = args.ok() ? Run(*args) : args.status();
  if (!status.ok()) {
    const auto message = status.message();  // absl::string_view
    std::fprintf(stderr, "showback: %.*s\n", static_cast<int>(message.size()), message.data());
    return args.ok() ? 1 : 2;
  }
  return 0;
}
