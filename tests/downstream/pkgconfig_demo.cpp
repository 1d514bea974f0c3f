// Built with only `pkg-config --cflags --libs ember` by scripts/test.sh.
#include <ember/ember.h>
#include <iostream>

int main() {
  ember::Tensor t = ember::linspace(0, 1, 5);
  std::cout << t << "\n";
  return t.sum().item<double>() == 2.5 ? 0 : 1;
}
