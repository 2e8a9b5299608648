// gpucost._core.BillingReader: the streaming billing reader. Python hands
// over byte chunks (buffer protocol, not copied) or Arrow record batches
// (the Arrow PyCapsule interface, not copied); the GIL is released while C++
// parses. The result comes back as numpy arrays owned by C++ plus the
// dictionaries of the string columns.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpucost/io/billing.h"
#include "gpucost/status.h"
#include "numpy_views.h"
#include "status_to_python.h"

namespace gpucost::python {
namespace {

using io::BillingFormat;
using io::BillingOptions;
using io::BillingReader;
using io::CostLines;

BillingFormat ParseFormat(const std::string& format) {
  if (format == "focus") return BillingFormat::kFocus;
  if (format == "cur") return BillingFormat::kCur;
  if (format == "gcp") return BillingFormat::kGcp;
  if (format == "azure") return BillingFormat::kAzure;
  ThrowIfError(ParameterError("format", "unknown billing format '" + format + "'"));
  return BillingFormat::kFocus;
}

py::dict ToPython(CostLines&& lines) {
  py::dict out;
  out["resource_id"] = EncodedToPython(std::move(lines.resource_id));
  out["start"] = MoveToNumpy(std::move(lines.start));
  out["end"] = MoveToNumpy(std::move(lines.end));
  out["cost"] = MoveToNumpy(std::move(lines.cost));
  out["list_cost"] = MoveToNumpy(std::move(lines.list_cost));
  out["billed_cost"] = MoveToNumpy(std::move(lines.billed_cost));
  out["effective_cost"] = MoveToNumpy(std::move(lines.effective_cost));
  out["provider"] = EncodedToPython(std::move(lines.provider));
  out["account"] = EncodedToPython(std::move(lines.account));
  out["region"] = EncodedToPython(std::move(lines.region));
  out["service"] = EncodedToPython(std::move(lines.service));
  out["sku"] = EncodedToPython(std::move(lines.sku));
  out["instance_type"] = EncodedToPython(std::move(lines.instance_type));
  out["pricing"] = EncodedToPython(std::move(lines.pricing));
  out["charge_category"] = EncodedToPython(std::move(lines.charge_category));
  out["commitment_id"] = EncodedToPython(std::move(lines.commitment_id));
  out["commitment_status"] = EncodedToPython(std::move(lines.commitment_status));
  out["currency"] = EncodedToPython(std::move(lines.currency));
  out["resource_name"] = EncodedToPython(std::move(lines.resource_name));
  out["tags"] = EncodedToPython(std::move(lines.tags));
  out["gpu"] = MoveToNumpy(std::move(lines.gpu));
  out["primary"] = MoveToNumpy(std::move(lines.primary));
  out["quantity_hours"] = MoveToNumpy(std::move(lines.quantity_hours));
  out["pricing_currency"] = EncodedToPython(std::move(lines.pricing_currency));
  out["instance_id"] = EncodedToPython(std::move(lines.instance_id));
  const io::BillingReport& r = lines.report;
  py::dict report;
  report["rows_read"] = r.rows_read;
  report["duplicates_dropped"] = r.duplicates_dropped;
  py::dict duplicate_cost;  // currency -> the amount of the rows dropped
  for (size_t k = 0; k < r.duplicate_currencies.size(); ++k) {
    duplicate_cost[py::str(r.duplicate_currencies[k])] = r.duplicate_cost[k];
  }
  report["duplicate_cost"] = duplicate_cost;
  report["primary_lines"] = r.primary_lines;
  report["quantity_unknown"] = r.quantity_unknown;
  report["hours_beyond_period"] = r.hours_beyond_period;
  report["hours_beyond_period_lines"] = r.hours_beyond_period_lines;
  report["currencies"] = r.currencies;
  report["naive_timestamps"] = r.naive_timestamps;
  if (!r.gcp_export.empty()) report["gcp_export"] = r.gcp_export;
  report["allocated_charges"] = r.allocated_charges;
  if (!r.first_allocated_charge.empty()) report["first_allocated_charge"] = r.first_allocated_charge;
  out["report"] = report;
  py::list tags;
  for (size_t k = 0; k < lines.tag_keys.size(); ++k) {
    tags.append(py::make_tuple(lines.tag_keys[k], EncodedToPython(std::move(lines.tag_values[k]))));
  }
  out["tag_columns"] = tags;
  return out;
}

// Arrow C data from an object with __arrow_c_array__ (pyarrow >= 14
// RecordBatch): the capsules own the data until they are collected.
std::pair<py::capsule, py::capsule> ArrowCapsules(const py::object& batch) {
  if (!py::hasattr(batch, "__arrow_c_array__")) {
    throw py::type_error("expected an Arrow record batch (an object with __arrow_c_array__)");
  }
  py::tuple pair = batch.attr("__arrow_c_array__")();
  return {pair[0].cast<py::capsule>(), pair[1].cast<py::capsule>()};
}

class PyBillingReader {
 public:
  PyBillingReader(const std::string& format, const std::string& amount, std::vector<std::string> expand_tags,
                  const std::optional<Catalog>& catalog, const std::string& source, const std::string& gcp_credits,
                  const std::string& azure_dataset, const std::string& tz,
                  std::shared_ptr<io::BillRows> seen) {
    BillingOptions options;
    options.seen = std::move(seen);
    options.amount = ValueOrThrow(io::ParseCostAmount(amount));
    options.expand_tags = std::move(expand_tags);
    if (catalog.has_value()) {
      catalog_ = std::make_unique<Catalog>(*catalog);
      options.catalog = catalog_.get();
    }
    options.source = source;
    options.tz = tz;
    if (gcp_credits == "net") {
      options.gcp_credits = io::GcpCredits::kNet;
    } else if (gcp_credits == "separate") {
      options.gcp_credits = io::GcpCredits::kSeparate;
    } else {
      ThrowIfError(ParameterError("credits", "unknown value '" + gcp_credits + "' (expected \"net\" or \"separate\")"));
    }
    if (azure_dataset == "amortized") {
      options.azure_dataset = io::AzureDataset::kAmortized;
    } else if (azure_dataset == "actual") {
      options.azure_dataset = io::AzureDataset::kActual;
    } else {
      ThrowIfError(ParameterError("dataset", "unknown dataset '" + azure_dataset +
                                                 "' (expected \"amortized\" or \"actual\")"));
    }
    reader_ = ValueOrThrow(BillingReader::Create(ParseFormat(format), std::move(options)));
  }

  void FeedCsv(const py::buffer& chunk) { Feed(chunk, &BillingReader::FeedCsv); }
  void FeedJsonLines(const py::buffer& chunk) { Feed(chunk, &BillingReader::FeedJsonLines); }

  void FeedArrow(const py::object& batch) {
    auto [schema_capsule, array_capsule] = ArrowCapsules(batch);
    const auto* schema = static_cast<const ArrowSchema*>(PyCapsule_GetPointer(schema_capsule.ptr(), "arrow_schema"));
    const auto* array = static_cast<const ArrowArray*>(PyCapsule_GetPointer(array_capsule.ptr(), "arrow_array"));
    if (schema == nullptr || array == nullptr) throw py::error_already_set();
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = reader_->FeedArrow(*schema, *array);
    }
    ThrowIfError(status);
  }

  void FailAtInputPosition(const std::string& what) { ThrowIfError(reader_->FailAtInputPosition(what)); }

  py::dict Finish() {
    absl::StatusOr<CostLines> lines;
    {
      py::gil_scoped_release release;
      lines = reader_->Finish();
    }
    return ToPython(ValueOrThrow(std::move(lines)));
  }

  int64_t rows() const { return reader_->rows(); }

 private:
  // Bytes of any buffer (bytes, bytearray, memoryview), read in place with
  // the GIL released.
  void Feed(const py::buffer& chunk, absl::Status (BillingReader::*feed)(std::string_view)) {
    py::buffer_info info = chunk.request();
    std::string_view bytes(static_cast<const char*>(info.ptr), static_cast<size_t>(info.size * info.itemsize));
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = (reader_.get()->*feed)(bytes);
    }
    ThrowIfError(status);
  }

  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<BillingReader> reader_;
};

}  // namespace

void RegisterBilling(py::module_& m) {
  py::class_<io::BillRows, std::shared_ptr<io::BillRows>>(
      m, "BillRows", "The rows of one bill read so far, shared by the readers of its parts (gpucost::io::BillRows).")
      .def(py::init<>())
      .def_property_readonly("size", &io::BillRows::size);
  py::class_<PyBillingReader>(m, "BillingReader", "Streaming reader of one billing export (gpucost::io).")
      .def(py::init<const std::string&, const std::string&, std::vector<std::string>, const std::optional<Catalog>&,
                    const std::string&, const std::string&, const std::string&, const std::string&,
                    std::shared_ptr<io::BillRows>>(),
           py::arg("format"), py::arg("amount"), py::arg("expand_tags"), py::arg("catalog"), py::arg("source"),
           py::arg("gcp_credits"), py::arg("azure_dataset"), py::arg("tz") = "", py::arg("seen") = nullptr)
      .def("feed_csv", &PyBillingReader::FeedCsv, py::arg("chunk"), "CSV bytes; any buffer, not copied.")
      .def("feed_json_lines", &PyBillingReader::FeedJsonLines, py::arg("chunk"))
      .def("feed_arrow", &PyBillingReader::FeedArrow, py::arg("batch"),
           "A record batch through the Arrow PyCapsule interface; structs flattened, dictionaries decoded.")
      .def("fail_at_input_position", &PyBillingReader::FailAtInputPosition, py::arg("what"))
      .def("finish", &PyBillingReader::Finish)
      .def_property_readonly("rows", &PyBillingReader::rows);

  m.def(
      "billing_columns", [](const std::string& format) { return io::BillingColumnNames(ParseFormat(format)); },
      py::arg("format"), "Every column name the format reads (for Parquet column projection).");
  m.def(
      "is_billing_tag_column",
      [](const std::string& format, const std::string& column) {
        return io::IsBillingTagColumn(ParseFormat(format), column);
      },
      py::arg("format"), py::arg("column"));
}

}  // namespace gpucost::python
