#include "sim/cli/svg_document.hpp"

#include <fmt/format.h>

#include "sim/check/junit.hpp"

namespace rehearse::cli {

std::string svg_document_start(int width, int height, std::string_view title) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<title>{}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height, width, height, sim::xml_escape(title));
}

}  // namespace rehearse::cli
