// gpucost/io/billing.h, io/focus.h, io/cur.h, io/gcp.h and io/azure.h by
// example: one hour of a GPU instance in each provider's export, read in one
// call, streamed in chunks and as an Arrow record batch (run by ctest as
// cpp_example_billing).
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "example_check.h"
#include "gpucost/io/azure.h"
#include "gpucost/io/billing.h"
#include "gpucost/io/cur.h"
#include "gpucost/io/focus.h"
#include "gpucost/io/gcp.h"

namespace {

// Two FOCUS 1.2 rows: an hour of a g5.xlarge (1 x A10G) and a tax line.
constexpr std::string_view kFocus =
    "BilledCost,BillingCurrency,ChargeCategory,ChargePeriodEnd,ChargePeriodStart,ConsumedQuantity,"
    "ConsumedUnit,EffectiveCost,ListCost,PricingCategory,ProviderName,RegionId,ResourceId,ServiceName,"
    "SubAccountId,Tags,x_UsageType\n"
    "1.006,USD,Usage,2025-03-01T11:00:00Z,2025-03-01T10:00:00Z,1,Hrs,1.006,1.006,Standard,AWS,us-west-2,"
    "i-0002,Amazon Elastic Compute Cloud,1111,\"{\"\"team\"\":\"\"ml\"\"}\",USW2-BoxUsage:g5.xlarge\n"
    "0.40,USD,Tax,2025-03-01T11:00:00Z,2025-03-01T10:00:00Z,,,0.40,0,,AWS,,,Tax,1111,,\n";

// The same hour in a CUR 2.0 export.
constexpr std::string_view kCur =
    "identity_line_item_id,identity_time_interval,line_item_usage_start_date,line_item_usage_end_date,"
    "line_item_usage_account_id,line_item_line_item_type,line_item_product_code,line_item_resource_id,"
    "line_item_usage_type,line_item_usage_amount,line_item_currency_code,line_item_unblended_cost,"
    "pricing_unit,pricing_public_on_demand_cost,product_instance_type,resource_tags\n"
    "id-1,2025-03-01T10:00:00Z/2025-03-01T11:00:00Z,2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1111,Usage,"
    "AmazonEC2,i-0002,USW2-BoxUsage:g5.xlarge,1.0,USD,1.006,Hrs,1.006,g5.xlarge,\"{\"\"user_team\"\": \"\"ml\"\"}\"\n";

// An hour of an a2-highgpu-1g's GPU SKU in GCP's detailed export, as CSV and
// as BigQuery JSON lines, with a $0.50 credit.
constexpr std::string_view kGcpCsv =
    "service.description,sku.description,usage_start_time,usage_end_time,project.id,labels,system_labels,"
    "location.region,resource.name,resource.global_name,cost,currency,usage.amount,usage.unit,credits,cost_at_list\n"
    "Compute Engine,Nvidia Tesla A100 GPU running in Americas,2025-03-01 10:00:00 UTC,2025-03-01 11:00:00 UTC,"
    "ml-prod,[],\"[{\"\"key\"\": \"\"compute.googleapis.com/machine_spec\"\", \"\"value\"\": \"\"a2-highgpu-1g\"\"}]\","
    "us-central1,trainer-1,//compute.googleapis.com/projects/ml-prod/zones/us-central1-a/instances/1111,"
    "2.9,USD,3600,seconds,\"[{\"\"name\"\": \"\"SUD\"\", \"\"amount\"\": -0.5, \"\"type\"\": \"\"SUSTAINED_USAGE_DISCOUNT\"\"}]\","
    "2.9\n";
constexpr std::string_view kGcpJson =
    R"({"service": {"description": "Compute Engine"}, "sku": {"description": "Nvidia Tesla A100 GPU running in Americas"}, )"
    R"("usage_start_time": "2025-03-01 10:00:00 UTC", "usage_end_time": "2025-03-01 11:00:00 UTC", )"
    R"("project": {"id": "ml-prod"}, "labels": [], "system_labels": [{"key": "compute.googleapis.com/machine_spec", )"
    R"("value": "a2-highgpu-1g"}], "location": {"region": "us-central1"}, "resource": {"name": "trainer-1", )"
    R"("global_name": "//compute.googleapis.com/projects/ml-prod/zones/us-central1-a/instances/1111"}, "cost": 2.9, )"
    R"("currency": "USD", "usage": {"amount": 3600, "unit": "seconds"}, "credits": [{"name": "SUD", "amount": -0.5, )"
    R"("type": "SUSTAINED_USAGE_DISCOUNT"}], "cost_at_list": 2.9})"
    "\n";

// A day of an Azure NC24ads A100 v4 (amortized dataset).
constexpr std::string_view kAzure =
    "date,SubscriptionId,ResourceId,resourceLocation,meterCategory,quantity,unitOfMeasure,chargeType,"
    "billingCurrency,costInBillingCurrency,paygCostInBillingCurrency,additionalInfo,tags,pricingModel\n"
    "03/01/2025,sub-1,/subscriptions/sub-1/resourceGroups/ML/providers/Microsoft.Compute/virtualMachines/VM-1,"
    "eastus,Virtual Machines,24,1 Hour,Usage,USD,88.16,88.16,"
    "\"{\"\"ServiceType\"\": \"\"Standard_NC24ads_A100_v4\"\"}\",\"{\"\"team\"\": \"\"ml\"\"}\",On Demand\n";

double Sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

}  // namespace

int main() {
  // [ParseCostAmount]
  // Which amount becomes `cost`: effective (amortized, the default), billed or list.
  CHECK(*gpucost::io::ParseCostAmount("amortized") == gpucost::io::CostAmount::kEffective);
  CHECK(*gpucost::io::ParseCostAmount("billed") == gpucost::io::CostAmount::kBilled);
  CHECK(!gpucost::io::ParseCostAmount("net").ok());
  // [ParseCostAmount]

  // [ReadFocusCsv]
  // A FOCUS export in memory. Every row is a line (the tax too), so the
  // lines' total is the export's; `gpu` marks the GPU instance's line.
  absl::StatusOr<gpucost::io::CostLines> focus = gpucost::io::ReadFocusCsv(kFocus);
  CHECK_OK(focus);
  CHECK(focus->size() == 2 && focus->gpu[0] == 1 && focus->gpu[1] == 0);
  CHECK_NEAR(Sum(focus->cost), 1.406);
  CHECK(focus->report.rows_read == 2 && focus->report.currencies == std::vector<std::string>{"USD"});
  const gpucost::CostColumns engine_view = focus->columns();  // what gpucost::Allocate reads
  CHECK(engine_view.currency.has_value() && engine_view.primary.has_value());
  // [ReadFocusCsv]

  // [BillingReader]
  // The same export streamed: CSV bytes in chunks of any size, then Finish().
  gpucost::io::BillingOptions options;
  options.source = "focus.csv";     // errors start with it
  options.expand_tags = {"team"};   // a column of its own
  absl::StatusOr<std::unique_ptr<gpucost::io::BillingReader>> reader =
      gpucost::io::BillingReader::Create(gpucost::io::BillingFormat::kFocus, options);
  CHECK_OK(reader);
  for (size_t at = 0; at < kFocus.size(); at += 7) CHECK_OK((*reader)->FeedCsv(kFocus.substr(at, 7)));
  CHECK((*reader)->rows() == 2);
  absl::StatusOr<gpucost::io::CostLines> streamed = (*reader)->Finish();
  CHECK_OK(streamed);
  CHECK(streamed->tag_keys == std::vector<std::string>{"team"});
  const gpucost::EncodedStrings& team = streamed->tag_values[0];
  CHECK(team.values[team.codes[0]] == "ml" && team.codes[1] == gpucost::kNullCode);
  // An error of the byte stream itself (a truncated gzip member) at the
  // reader's position; sticky: the reader never yields a partial result.
  absl::StatusOr<std::unique_ptr<gpucost::io::BillingReader>> broken =
      gpucost::io::BillingReader::Create(gpucost::io::BillingFormat::kFocus, options);
  CHECK_OK((*broken)->FeedCsv(kFocus.substr(0, kFocus.size() - 10)));
  const absl::Status truncated = (*broken)->FailAtInputPosition("truncated gzip member");
  CHECK(!truncated.ok() && !(*broken)->Finish().ok());
  std::printf("%s\n", std::string(truncated.message()).c_str());
  // [BillingReader]

  // [BillRows]
  // The parts of one bill share a record of rows read: a part delivered
  // twice is dropped and counted, with its dollars.
  options.seen = std::make_shared<gpucost::io::BillRows>();
  CHECK_OK(gpucost::io::ReadBilling(gpucost::io::BillingFormat::kFocus, kFocus, options));
  absl::StatusOr<gpucost::io::CostLines> again = gpucost::io::ReadBilling(gpucost::io::BillingFormat::kFocus, kFocus, options);
  CHECK_OK(again);
  CHECK(again->size() == 0 && again->report.duplicates_dropped == 2);
  const gpucost::io::BillingReport& report = again->report;
  CHECK_NEAR(report.duplicate_cost[0], 1.406);
  CHECK(options.seen->size() == 2);
  gpucost::io::BillRows rows;
  CHECK(rows.Insert("row 1") && !rows.Insert("row 1") && rows.size() == 1);
  // [BillRows]

  // [ReadCurCsv]
  // AWS CUR (legacy or 2.0, told by the column names).
  absl::StatusOr<gpucost::io::CostLines> cur = gpucost::io::ReadCurCsv(kCur);
  CHECK_OK(cur);
  CHECK(cur->size() == 1 && cur->gpu[0] == 1 && cur->primary[0] == 1);
  CHECK_NEAR(cur->cost[0], 1.006);
  CHECK_NEAR(cur->quantity_hours[0], 1.0);
  // [ReadCurCsv]

  // [ReadGcpBillingCsv]
  // GCP: credits netted into their line by default, or lines of their own.
  absl::StatusOr<gpucost::io::CostLines> gcp = gpucost::io::ReadGcpBillingCsv(kGcpCsv);
  CHECK_OK(gcp);
  CHECK(gcp->size() == 1 && gcp->gpu[0] == 1 && gcp->report.gcp_export == "detailed");
  CHECK_NEAR(gcp->cost[0], 2.4);
  gpucost::io::BillingOptions separate;
  separate.gcp_credits = gpucost::io::GcpCredits::kSeparate;
  absl::StatusOr<gpucost::io::CostLines> gcp_json = gpucost::io::ReadGcpBillingJsonLines(kGcpJson, separate);
  CHECK_OK(gcp_json);
  CHECK(gcp_json->size() == 2);  // the GPU SKU line and its credit
  CHECK_NEAR(Sum(gcp_json->cost), 2.4);
  // [ReadGcpBillingCsv]

  // [ReadAzureCostsCsv]
  // Azure cost details: each row is a day; the dataset is told by the caller.
  gpucost::io::BillingOptions azure_options;
  azure_options.azure_dataset = gpucost::io::AzureDataset::kAmortized;
  absl::StatusOr<gpucost::io::CostLines> azure = gpucost::io::ReadAzureCostsCsv(kAzure, azure_options);
  CHECK_OK(azure);
  CHECK(azure->size() == 1 && azure->end[0] - azure->start[0] == gpucost::kNanosPerDay);
  CHECK(azure->gpu[0] == 1);
  // [ReadAzureCostsCsv]

  // [BillingColumnNames]
  // The columns a format reads, for projecting Parquet files; tag columns of
  // the legacy CUR are told apart by name.
  const std::vector<std::string> focus_columns = gpucost::io::BillingColumnNames(gpucost::io::BillingFormat::kFocus);
  bool has_effective = false;
  for (const std::string& c : focus_columns) has_effective |= c == "EffectiveCost";
  CHECK(has_effective);
  CHECK(gpucost::io::IsBillingTagColumn(gpucost::io::BillingFormat::kCur, "resourceTags/user:team"));
  CHECK(!gpucost::io::IsBillingTagColumn(gpucost::io::BillingFormat::kCur, "lineItem/UnblendedCost"));
  // [BillingColumnNames]

  // [FeedArrow]
  // Arrow record batches (Parquet from Python comes this way): a struct
  // array whose children are the columns, here three strings and a float64.
  struct Column {
    std::string name;
    std::vector<std::string> text;  // utf8 column ("u")
    std::vector<double> number;     // float64 column ("g")
    std::vector<int32_t> offsets;
    std::string data;
    std::vector<const void*> buffers;
    ArrowSchema schema{};
    ArrowArray array{};
  };
  std::vector<Column> columns(4);
  columns[0] = {.name = "ChargePeriodStart", .text = {"2025-03-01T10:00:00Z"}};
  columns[1] = {.name = "ChargePeriodEnd", .text = {"2025-03-01T11:00:00Z"}};
  columns[2] = {.name = "ResourceId", .text = {"i-0002"}};
  columns[3] = {.name = "EffectiveCost", .number = {1.006}};
  std::vector<ArrowSchema*> child_schemas;
  std::vector<ArrowArray*> child_arrays;
  for (Column& c : columns) {
    const bool is_text = !c.text.empty();
    c.offsets = {0};
    for (const std::string& s : c.text) c.data += s, c.offsets.push_back(static_cast<int32_t>(c.data.size()));
    c.buffers = is_text ? std::vector<const void*>{nullptr, c.offsets.data(), c.data.data()}
                        : std::vector<const void*>{nullptr, c.number.data()};
    c.schema = {.format = is_text ? "u" : "g", .name = c.name.c_str(), .flags = ARROW_FLAG_NULLABLE,
                .release = [](ArrowSchema* s) { s->release = nullptr; }};
    c.array = {.length = 1, .n_buffers = static_cast<int64_t>(c.buffers.size()), .buffers = c.buffers.data(),
               .release = [](ArrowArray* a) { a->release = nullptr; }};
    child_schemas.push_back(&c.schema);
    child_arrays.push_back(&c.array);
  }
  const void* struct_buffers[] = {nullptr};
  ArrowSchema schema{.format = "+s", .name = "", .n_children = 4, .children = child_schemas.data(),
                     .release = [](ArrowSchema* s) { s->release = nullptr; }};
  ArrowArray batch{.length = 1, .n_buffers = 1, .n_children = 4, .buffers = struct_buffers,
                   .children = child_arrays.data(), .release = [](ArrowArray* a) { a->release = nullptr; }};
  absl::StatusOr<std::unique_ptr<gpucost::io::BillingReader>> arrow =
      gpucost::io::BillingReader::Create(gpucost::io::BillingFormat::kFocus, {});
  CHECK_OK((*arrow)->FeedArrow(schema, batch));
  absl::StatusOr<gpucost::io::CostLines> from_arrow = (*arrow)->Finish();
  CHECK_OK(from_arrow);
  CHECK(from_arrow->size() == 1);
  CHECK_NEAR(from_arrow->cost[0], 1.006);
  // [FeedArrow]

  // [FeedJsonLines]
  // BigQuery's JSON lines, streamed (GCP only).
  absl::StatusOr<std::unique_ptr<gpucost::io::BillingReader>> json =
      gpucost::io::BillingReader::Create(gpucost::io::BillingFormat::kGcp, {});
  CHECK_OK((*json)->FeedJsonLines(kGcpJson.substr(0, 100)));
  CHECK_OK((*json)->FeedJsonLines(kGcpJson.substr(100)));
  CHECK((*json)->Finish()->size() == 1);
  CHECK(!gpucost::io::BillingReader::Create(gpucost::io::BillingFormat::kCur, {}).value()->FeedJsonLines("{}\n").ok());
  // [FeedJsonLines]
  return 0;
}
