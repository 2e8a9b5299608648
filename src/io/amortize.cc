// GCP committed-use discounts amortized as AWS amortized cost and FOCUS
// EffectiveCost are (docs/formats.md, "GCP committed-use discounts").
//
// GCP bills a CUD as a balance sheet, hour by hour: a resource-less fee line
// ("Commitment v1: A100 GPU in Americas for 1 Year", or "Commitment - dollar
// based v1: GCE for 1 year" for a spend-based CUD) and credits on the usage it
// covers (COMMITTED_USAGE_DISCOUNT, COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE) that
// cancel the on-demand price of the covered part. Read as billed, the covered
// service costs nothing and the fee lands on nobody. Amortized, per hour and
// pool (region and resource; the account's spend-based commitments):
//   u       = covered / committed (quantities: usage.amount of the covered part
//             against the fee's; spend-based: the credits against the hourly
//             commitment), capped at 1; 1 when the export has no quantities
//   used    = fee * u, spread over the covered lines by their credits (the
//             on-demand value each had covered)
//   unused  = fee - used, a line of its own: resource-less, with the fee's
//             project, labels and period, commitment_status "Unused"
// The fee line keeps its billed amount and gets an effective amount of 0.
// Fees with FEE_UTILIZATION_OFFSET credits (GCP's new spend-based model:
// usage is priced at the discounted rate already, and the offset cancels the
// used part of the fee) only move their net, the unused part, to an Unused line.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "billing_internal.h"

namespace gpucost::io::internal {
namespace {

using Kind = CommitmentNote::Kind;

bool IsFee(Kind kind) { return kind == Kind::kResourceFee || kind == Kind::kSpendFee || kind == Kind::kOffsetFee; }

// Words that do not tell one resource from another (the spot purchase's name
// included: "Spot Preemptible Nvidia Tesla A100 GPU" is the A100 GPU too).
bool Noise(std::string_view word) {
  return word.empty() || word == "nvidia" || word == "tesla" || word == ToString(Purchase::kSpot) ||
         word == "preemptible" || word == "instance" || word == "predefined" || word == "custom" || word == "extended";
}

}  // namespace

std::string CudPool(std::string_view region, std::string_view description, bool fee) {
  std::string text = absl::AsciiStrToLower(ToAbsl(description));
  if (fee) {
    const size_t colon = text.find(':');
    if (colon == std::string::npos) return "";
    text = text.substr(colon + 1);
  }
  // "... running in Americas", "... in Americas for 1 Year": the resource is before.
  for (std::string_view cut : {" running", " in "}) {
    if (const size_t at = text.find(cut); at != std::string::npos) text.resize(at);
  }
  std::vector<std::string> words;
  for (absl::string_view w : absl::StrSplit(text, ' ', absl::SkipEmpty())) words.emplace_back(w);
  std::string resource;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] != "gpu") continue;
    std::vector<std::string> model;
    for (size_t j = 0; j < i; ++j) {
      if (!Noise(words[j])) model.push_back(words[j]);
    }
    resource = absl::StrCat("gpu:", absl::StrJoin(model, " "));
    break;
  }
  if (resource.empty() && !words.empty()) {
    const std::string& last = words.back();
    const char* kind = last == "cpu" || last == "core" ? "cpu:" : last == "ram" || last == "memory" ? "ram:" : nullptr;
    if (kind == nullptr) return "";
    std::vector<std::string> family;
    for (size_t j = 0; j + 1 < words.size(); ++j) {
      if (!Noise(words[j])) family.push_back(words[j]);
    }
    // The first-generation commitments ("Commitment v1: Cpu") and usage
    // ("Custom Instance Core") name no family: N1.
    resource = absl::StrCat(kind, family.empty() ? "n1" : absl::StrJoin(family, " "));
  }
  if (resource.empty()) return "";
  return absl::StrCat(ToAbsl(region), "/", resource);
}

bool IsGpuFamilyPool(std::string_view pool) {
  const size_t at = pool.rfind('/');
  std::string_view resource = at == std::string_view::npos ? pool : pool.substr(at + 1);
  for (std::string_view prefix : {"cpu:", "ram:"}) {
    if (absl::StartsWith(ToAbsl(resource), ToAbsl(prefix))) {
      const std::string_view family = resource.substr(prefix.size());
      for (std::string_view gpu_family : {"a2", "a3", "a4", "g2", "g4"}) {
        if (absl::StartsWith(ToAbsl(family), ToAbsl(gpu_family))) return true;
      }
    }
  }
  return false;
}

absl::Status AmortizeCommitments(LineBuilder& out) {
  const std::vector<CommitmentNote>& notes = out.commitment_notes();
  if (notes.empty()) return absl::OkStatus();
  // Groups in order of first appearance, so the output does not depend on hashing.
  struct Group {
    std::vector<size_t> fees, covered;
  };
  std::vector<Group> groups;
  absl::flat_hash_map<std::pair<int64_t, absl::string_view>, size_t> index;
  for (size_t n = 0; n < notes.size(); ++n) {
    const CommitmentNote& note = notes[n];
    const std::pair<int64_t, absl::string_view> key{out.start(note.line), ToAbsl(note.pool)};
    auto [it, inserted] = index.try_emplace(key, groups.size());
    if (inserted) groups.emplace_back();
    (IsFee(note.kind) ? groups[it->second].fees : groups[it->second].covered).push_back(n);
  }
  auto internal_error = [](std::string_view what) { return absl::InternalError(std::string(what)); };
  for (const Group& group : groups) {
    if (group.fees.empty()) continue;  // covered usage whose fee is not in this export: left as billed
    double fee_total = 0, committed = 0, used_quantity = 0, weight = 0;
    bool quantities = true;
    bool offset = false;
    for (size_t n : group.fees) {
      const CommitmentNote& fee = notes[n];
      offset = fee.kind == Kind::kOffsetFee;
      // An offset fee's net (fee + offset) is its unused part already.
      fee_total += offset ? out.effective(fee.line) : fee.gross;
      committed += fee.quantity;
      quantities = quantities && std::isfinite(fee.quantity) && fee.quantity > 0;
    }
    for (size_t n : group.covered) {
      const CommitmentNote& c = notes[n];
      weight += -c.credit;
      if (c.kind == Kind::kSpendCovered) {
        used_quantity += -c.credit;  // on-demand dollars, as the commitment is counted
      } else if (std::isfinite(c.quantity) && c.gross > 0) {
        used_quantity += c.quantity * (-c.credit / c.gross);
      } else {
        quantities = false;
      }
    }
    auto not_finite = [&] {
      return TableError(out.options().source,
                        absl::StrCat("the committed-use discount amounts of pool '", ToAbsl(notes[group.fees.front()].pool),
                                     "' in one hour add up to a number that is not finite"));
    };
    if (!std::isfinite(fee_total) || !std::isfinite(weight)) return not_finite();
    double used = 0;
    if (!offset && weight > 0) {
      const double u = quantities ? std::min(1.0, used_quantity / committed) : 1.0;
      used = fee_total * u;
    }
    const double unused = fee_total - used;
    // The used part onto the covered lines, by the on-demand value each had covered.
    double spread = 0;
    for (size_t k = 0; k < group.covered.size() && used != 0; ++k) {
      const CommitmentNote& c = notes[group.covered[k]];
      const double share = k + 1 == group.covered.size() ? used - spread : used * (-c.credit / weight);
      spread += share;
      if (!std::isfinite(out.effective(c.line) + share)) return not_finite();
      out.SetEffective(c.line, out.effective(c.line) + share);
    }
    // The fees: effective 0 (their money now sits on the usage and the unused lines).
    double placed = 0;
    for (size_t k = 0; k < group.fees.size(); ++k) {
      const CommitmentNote& fee = notes[group.fees[k]];
      const double own = offset ? out.effective(fee.line) : fee.gross;
      out.SetEffective(fee.line, out.effective(fee.line) - own);
      if (unused == 0) continue;
      const double part = k + 1 == group.fees.size() ? unused - placed
                          : fee_total != 0         ? unused * (own / fee_total)
                                                   : 0.0;
      placed += part;
      Line line = out.commitment_fee(fee.fee);
      line.effective = part;
      line.billed = 0;
      line.list = kNaN;
      line.charge_category = ToString(ChargeCategory::kUsage);
      line.commitment_status = "Unused";
      line.pricing = ToString(Purchase::kCommittedUse);
      out.UseTagsOf(fee.line);
      GPUCOST_RETURN_IF_ERROR(out.Commit(line, internal_error));
    }
  }
  return absl::OkStatus();
}

}  // namespace gpucost::io::internal
