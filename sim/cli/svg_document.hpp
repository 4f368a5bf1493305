// The opening of the SVG pictures `rehearse tune` writes: the XML
// declaration, the root element sized in pixels, the title a viewer shows,
// and a white background (a transparent picture is unreadable in dark
// viewers).
#pragma once

#include <string>
#include <string_view>

namespace rehearse::cli {

// Up to and including the background; the caller closes with "</svg>\n".
std::string svg_document_start(int width, int height, std::string_view title);

}  // namespace rehearse::cli
