#include "gpucost/columns.h"

#include <string>
#include <utility>

namespace gpucost {

int32_t StringEncoder::Add(std::string_view value) {
  // Look up without building a std::string: only new values are copied.
  auto it = index_.find(absl::string_view(value.data(), value.size()));
  if (it == index_.end()) {
    it = index_.emplace(std::string(value), static_cast<int32_t>(encoded_.values.size())).first;
    encoded_.values.emplace_back(value);
  }
  encoded_.codes.push_back(it->second);
  return it->second;
}

EncodedStrings StringEncoder::Finish() {
  EncodedStrings out = std::move(encoded_);
  encoded_ = EncodedStrings();
  index_.clear();
  out.value_views.assign(out.values.begin(), out.values.end());
  return out;
}

EncodedStrings EncodeStrings(std::span<const std::string_view> values) {
  StringEncoder encoder;
  for (std::string_view v : values) encoder.Add(v);
  return encoder.Finish();
}

EncodedStrings EncodeStrings(std::span<const std::string> values) {
  StringEncoder encoder;
  for (const std::string& v : values) encoder.Add(v);
  return encoder.Finish();
}

}  // namespace gpucost
