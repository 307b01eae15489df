// Synthetic test images shared by the image tests: gradients, edges and noise of any size.
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>

#include "image/image.h"

namespace systolic::image::testing {

enum class Pattern { gradient, edges, noise, smooth_noise };

inline Image make_image(int w, int h, Pattern p, uint32_t seed = 1) {
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.resize(static_cast<std::size_t>(w) * h * 3);
  std::mt19937 rng(seed);
  // Smooth noise: a coarse random grid, bilinearly interpolated.
  const int gw = 9, gh = 9;
  float grid[gh][gw][3];
  for (auto& row : grid)
    for (auto& px : row)
      for (float& c : px) c = static_cast<float>(rng() % 256);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* px = &img.rgb[(static_cast<std::size_t>(y) * w + x) * 3];
      for (int c = 0; c < 3; ++c) {
        int v = 0;
        switch (p) {
          case Pattern::gradient:
            v = c == 0 ? (x * 255) / std::max(w - 1, 1) : c == 1 ? (y * 255) / std::max(h - 1, 1) : ((x + y) * 255) / std::max(w + h - 2, 1);
            break;
          case Pattern::edges:  // stripes, checkers and a diagonal: sharp transitions
            v = c == 0 ? ((x / 5) % 2) * 255 : c == 1 ? (((x / 16) + (y / 16)) % 2) * 200 + 30 : (x > y ? 240 : 10);
            break;
          case Pattern::noise:
            v = static_cast<int>(rng() % 256);
            break;
          case Pattern::smooth_noise: {
            const float fx = w > 1 ? x * (gw - 1.0f) / (w - 1) : 0, fy = h > 1 ? y * (gh - 1.0f) / (h - 1) : 0;
            const int x0 = std::min(static_cast<int>(fx), gw - 2), y0 = std::min(static_cast<int>(fy), gh - 2);
            const float ax = fx - x0, ay = fy - y0;
            const float top = grid[y0][x0][c] * (1 - ax) + grid[y0][x0 + 1][c] * ax;
            const float bot = grid[y0 + 1][x0][c] * (1 - ax) + grid[y0 + 1][x0 + 1][c] * ax;
            v = static_cast<int>(top * (1 - ay) + bot * ay + 0.5f);
            break;
          }
        }
        px[c] = static_cast<uint8_t>(v);
      }
    }
  return img;
}

}  // namespace systolic::image::testing
