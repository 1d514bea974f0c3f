/* A C99 consumer of the installed package through pkg-config: the C ABI's header and libember. */
#include <ember/c/ember.h>
#include <stdio.h>

int main(void) {
  const float v[4] = {1, 2, 3, 4};
  const int64_t shape[2] = {2, 2};
  ember_tensor *a = NULL, *b = NULL;
  float out[4];
  if (ember_tensor_from_data(v, EMBER_F32, shape, 2, NULL, &a) != EMBER_OK ||
      ember_matmul(a, a, &b) != EMBER_OK || ember_tensor_read_f32(b, out, 4) != EMBER_OK) {
    fprintf(stderr, "%s\n", ember_last_error());
    return 1;
  }
  printf("ember %s from C: [[%g, %g], [%g, %g]]\n", ember_version(), out[0], out[1], out[2], out[3]);
  ember_tensor_free(a);
  ember_tensor_free(b);
  return out[0] == 7 && out[3] == 22 ? 0 : 1;
}
