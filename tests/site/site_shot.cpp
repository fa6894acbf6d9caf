// A screenshot of one page with headless Chromium, for site/screenshot.sh:
//   site-shot OUT.png URL WIDTH HEIGHT [CSS-SELECTOR to scroll to | js:SCRIPT to run first]
#include <cstdio>
#include <fstream>
#include <string>

#include "chromium.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: site-shot OUT.png URL WIDTH HEIGHT [CSS-SELECTOR]\n");
    return 2;
  }
  try {
    const int width = std::stoi(argv[3]), height = std::stoi(argv[4]);
    kiln::site_test::Chromium browser(kiln::site_test::Chromium::find(), width, height);
    browser.resize(width, height, width < 600);
    for (const auto& p : browser.open(argv[2])) std::fprintf(stderr, "site-shot: %s\n", p.c_str());
    if (argc > 5 && std::string(argv[5]).rfind("js:", 0) == 0) {  // a script to run first, e.g. to open the menu
      browser.evaluate(std::string("(async () => { ") + (argv[5] + 3) +
                       "; await new Promise(r => setTimeout(r, 300)); })()");
    } else if (argc > 5) {
      const nlohmann::json selector = argv[5];
      browser.evaluate("(() => { const e = document.querySelector(" + selector.dump() +
                       "); if (e) e.scrollIntoView({block: 'start'}); "
                       "return new Promise(r => requestAnimationFrame(() => setTimeout(r, 100))); })()");
    }
    std::ofstream(argv[1], std::ios::binary) << browser.screenshot_png();
    std::printf("%s\n", argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "site-shot: %s\n", e.what());
    return 1;
  }
  return 0;
}
