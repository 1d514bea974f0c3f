// Papercuts a new user meets: the thread count is public, and a file of another format handed to
// the safetensors reader is named as what it is.
#include <gtest/gtest.h>

#include <string>

#include "ember/ember.h"
#include "ember/store/safetensors.h"

namespace ember {
namespace {

TEST(Packaging, ThreadCountIsPublic) {
  const int old = num_threads();
  set_num_threads(1);
  EXPECT_EQ(num_threads(), 1);
  set_num_threads(old);
  EXPECT_EQ(num_threads(), old);
}

std::string open_error(const std::string& bytes) {
  try {
    store::SafetensorsFile::from_bytes(bytes, "model.pt");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Packaging, SafetensorsReaderNamesOtherFormats) {
  const std::string zip = std::string("PK\x03\x04", 4) + std::string(60, '\0');
  EXPECT_NE(open_error(zip).find("zip archive, such as a PyTorch .pt"), std::string::npos)
      << open_error(zip);
  const std::string pickle = std::string("\x80\x02\x8a\x0al\xfc\x9c" "F\xf9 j\xa8P\x19.", 15);
  EXPECT_NE(open_error(pickle).find("Python pickle"), std::string::npos) << open_error(pickle);
  // A real header whose length starts with the same bytes as a pickle is read as safetensors.
  std::string header = "{\"__metadata__\":{\"k\":\"" + std::string(640 - 22 - 3, 'x') + "\"}}";
  ASSERT_EQ(header.size(), 0x280u);
  std::string file("\x80\x02\0\0\0\0\0\0", 8);
  EXPECT_NO_THROW(store::SafetensorsFile::from_bytes(file + header, "ok.safetensors"));
}

}  // namespace
}  // namespace ember
