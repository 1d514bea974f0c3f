/* The C ABI from plain C99: success paths and bad calls (each must return a status and a
 * message naming the entry point and op; none may abort). Usage: c_api_check WORK_DIR */
#include <ember/c/ember.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              ember_last_error());                                    \
      ++failures;                                                     \
    }                                                                 \
  } while (0)
#define OK(call) CHECK((call) == EMBER_OK)
/* A call that must fail with `status` and a message containing both strings. */
#define FAILS(call, status, s1, s2)                                           \
  do {                                                                        \
    ember_status st_ = (call);                                                \
    CHECK(st_ == (status));                                                   \
    CHECK(strstr(ember_last_error(), (s1)) != NULL);                          \
    CHECK(strstr(ember_last_error(), (s2)) != NULL);                          \
    if (st_ != (status)) fprintf(stderr, "  got %s\n", ember_status_name(st_)); \
  } while (0)

static ember_tensor* make(const float* v, const int64_t* shape, int ndim) {
  ember_tensor* t = NULL;
  OK(ember_tensor_from_data(v, EMBER_F32, shape, ndim, NULL, &t));
  return t;
}

static void tensors_and_ops(void) {
  const float av[6] = {1, -2, 3, -4, 5, -6}, bv[6] = {1, 2, 3, 4, 5, 6};
  const int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
  ember_tensor *a = make(av, s23, 2), *b = make(bv, s23, 2), *bt = make(bv, s32, 2);
  int ndim = 0;
  int64_t shape[4] = {0}, numel = 0;
  ember_dtype dt = EMBER_BOOL;
  OK(ember_tensor_ndim(a, &ndim));
  CHECK(ndim == 2);
  OK(ember_tensor_shape(a, shape, 4));
  CHECK(shape[0] == 2 && shape[1] == 3);
  OK(ember_tensor_dtype(a, &dt));
  CHECK(dt == EMBER_F32);
  OK(ember_tensor_numel(a, &numel));
  CHECK(numel == 6);

  ember_tensor *sum = NULL, *prod = NULL, *mm = NULL, *r = NULL, *sm = NULL;
  float out[6];
  OK(ember_add(a, b, &sum));
  OK(ember_tensor_read(sum, out, sizeof out));
  CHECK(out[0] == 2 && out[1] == 0 && out[5] == 0);
  OK(ember_mul(a, b, &prod));
  OK(ember_tensor_read_f32(prod, out, 6));
  CHECK(out[1] == -4 && out[5] == -36);
  OK(ember_matmul(a, bt, &mm)); /* [2,3] x [3,2] */
  OK(ember_tensor_shape(mm, shape, 4));
  CHECK(shape[0] == 2 && shape[1] == 2);
  OK(ember_tensor_read_f32(mm, out, 4));
  CHECK(out[0] == 1 * 1 - 2 * 3 + 3 * 5 && out[3] == -4 * 2 + 5 * 4 - 6 * 6);
  OK(ember_relu(a, &r));
  OK(ember_tensor_read_f32(r, out, 6));
  CHECK(out[0] == 1 && out[1] == 0 && out[4] == 5 && out[5] == 0);
  OK(ember_softmax(a, -1, &sm));
  OK(ember_tensor_read_f32(sm, out, 6));
  CHECK(fabsf(out[0] + out[1] + out[2] - 1) < 1e-6f);
  CHECK(out[2] > out[0] && out[0] > out[1]);

  /* The registry by name: permute with its dims in the ints slot. */
  ember_attrs at;
  ember_attrs_init(&at);
  at.ints[0] = 1;
  at.ints[1] = 0;
  at.n_ints = 2;
  ember_tensor* outs[2] = {NULL, NULL};
  const ember_tensor* ins[1] = {a};
  int n_out = 0;
  OK(ember_op_call("permute", ins, 1, &at, outs, 2, &n_out));
  CHECK(n_out == 1);
  OK(ember_tensor_shape(outs[0], shape, 4));
  CHECK(shape[0] == 3 && shape[1] == 2);
  OK(ember_tensor_read_f32(outs[0], out, 6));
  CHECK(out[1] == -4 && out[2] == -2);
  ember_tensor_free(outs[0]);
  FAILS(ember_op_call("no_such_op", ins, 1, NULL, outs, 2, &n_out), EMBER_ERR_VALUE,
        "ember_op_call", "no_such_op");

  char* text = NULL;
  OK(ember_tensor_str(a, &text));
  CHECK(text && strstr(text, "tensor(") != NULL);
  ember_string_free(text);

  /* Bad calls: a status and a message naming the entry point (and the op), never an abort. */
  ember_tensor* bad = NULL;
  FAILS(ember_add(NULL, b, &bad), EMBER_ERR_NULL, "ember_add", "'a'");
  FAILS(ember_add(a, b, NULL), EMBER_ERR_NULL, "ember_add", "'out'");
  FAILS(ember_matmul(a, b, &bad), EMBER_ERR_SHAPE, "ember_matmul", "[matmul]");
  CHECK(bad == NULL);
  FAILS(ember_tensor_read(a, out, 7), EMBER_ERR_BUFFER, "ember_tensor_read", "24 bytes");
  FAILS(ember_tensor_shape(a, shape, 1), EMBER_ERR_BUFFER, "ember_tensor_shape", "cap");
  FAILS(ember_tensor_from_data(av, (ember_dtype)42, s23, 2, NULL, &bad), EMBER_ERR_VALUE,
        "ember_tensor_from_data", "ember_dtype 42");
  FAILS(ember_tensor_from_data(NULL, EMBER_F32, s23, 2, NULL, &bad), EMBER_ERR_NULL,
        "ember_tensor_from_data", "'data'");
  FAILS(ember_softmax(a, 5, &bad), EMBER_ERR_INDEX, "ember_softmax", "softmax");
  const int64_t s7[1] = {7};
  FAILS(ember_tensor_reshape(a, s7, 1, &bad), EMBER_ERR_SHAPE, "ember_tensor_reshape", "reshape");
  ember_device* gpu = NULL;
  CHECK(ember_device_cuda(99, &gpu) == EMBER_ERR_DEVICE);
  CHECK(strstr(ember_last_error(), "ember_device_cuda") != NULL);
  FAILS(ember_device_parse("tpu", &gpu), EMBER_ERR_VALUE, "ember_device_parse", "tpu");
  CHECK(gpu == NULL);

  ember_tensor_free(a);
  ember_tensor_free(b);
  ember_tensor_free(bt);
  ember_tensor_free(sum);
  ember_tensor_free(prod);
  ember_tensor_free(mm);
  ember_tensor_free(r);
  ember_tensor_free(sm);
  ember_tensor_free(NULL); /* a no-op, like free(NULL) */
}

static char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = malloc((size_t)n);
  *size = fread(buf, 1, (size_t)n, f);
  fclose(f);
  return buf;
}

static void modules_and_files(const char* work) {
  char path[1024];
  snprintf(path, sizeof path, "%s/c_api_mlp.safetensors", work);
  const int64_t sizes[3] = {4, 8, 3};
  ember_module *mlp = NULL, *mlp2 = NULL, *cnn = NULL;
  OK(ember_model_mlp(sizes, 3, &mlp));
  int64_t n_params = 0;
  OK(ember_module_num_parameters(mlp, &n_params));
  CHECK(n_params == 4 * 8 + 8 + 8 * 3 + 3);
  ember_state_dict* sd = NULL;
  OK(ember_module_state_dict(mlp, &sd));
  size_t n_keys = 0;
  const char* key = NULL;
  OK(ember_state_dict_size(sd, &n_keys));
  CHECK(n_keys == 4);
  OK(ember_state_dict_key(sd, 2, &key));
  CHECK(key && strcmp(key, "2.weight") == 0);
  OK(ember_state_dict_save_file(sd, path));

  /* From the file, and from its bytes in memory: the same outputs as the original. */
  ember_state_dict *from_path = NULL, *from_bytes = NULL;
  OK(ember_state_dict_load_file(path, &from_path));
  size_t size = 0;
  char* bytes = read_file(path, &size);
  CHECK(bytes != NULL);
  OK(ember_state_dict_load_bytes(bytes, size, &from_bytes));
  OK(ember_model_mlp(sizes, 3, &mlp2));
  OK(ember_module_load_state_dict(mlp2, from_path, 1));
  OK(ember_module_load_state_dict(mlp2, from_bytes, 1));
  const float xv[8] = {0.5f, -1, 2, 0.25f, 1, 1, -1, 0};
  const int64_t xs[2] = {2, 4};
  ember_tensor *x = make(xv, xs, 2), *y1 = NULL, *y2 = NULL;
  OK(ember_module_forward(mlp, x, &y1));
  OK(ember_module_forward(mlp2, x, &y2));
  float o1[6], o2[6];
  OK(ember_tensor_read_f32(y1, o1, 6));
  OK(ember_tensor_read_f32(y2, o2, 6));
  CHECK(memcmp(o1, o2, sizeof o1) == 0);

  /* The CNN: [N,1,28,28] -> [N,10]; wrong shapes and wrong weights are statuses. */
  OK(ember_model_fashion_cnn(&cnn));
  OK(ember_module_train(cnn, 0));
  ember_tensor *img = NULL, *logits = NULL, *bad = NULL;
  const int64_t is[4] = {1, 1, 28, 28}, wrong[4] = {1, 3, 28, 28};
  OK(ember_tensor_zeros(EMBER_F32, is, 4, NULL, &img));
  OK(ember_module_forward(cnn, img, &logits));
  int64_t ls[2] = {0, 0};
  OK(ember_tensor_shape(logits, ls, 2));
  CHECK(ls[0] == 1 && ls[1] == 10);
  ember_tensor_free(img);
  OK(ember_tensor_zeros(EMBER_F32, wrong, 4, NULL, &img));
  FAILS(ember_module_forward(cnn, img, &bad), EMBER_ERR_SHAPE, "ember_module_forward", "[conv2d]");
  FAILS(ember_module_load_state_dict(cnn, from_path, 1), EMBER_ERR_KEY,
        "ember_module_load_state_dict", "missing keys: conv1.bias");
  FAILS(ember_module_forward(NULL, img, &bad), EMBER_ERR_NULL, "ember_module_forward", "module");

  /* Files that are not there or not safetensors. */
  ember_state_dict* none = NULL;
  FAILS(ember_state_dict_load_file("/nonexistent/w.safetensors", &none), EMBER_ERR_IO,
        "ember_state_dict_load_file", "/nonexistent/w.safetensors");
  FAILS(ember_state_dict_load_bytes("garbage!garbage!", 16, &none), EMBER_ERR_FORMAT,
        "ember_state_dict_load_bytes", "<memory>");
  FAILS(ember_state_dict_load_bytes(bytes, size / 2, &none), EMBER_ERR_FORMAT,
        "ember_state_dict_load_bytes", "<memory>");
  ember_tensor* missing = NULL;
  FAILS(ember_state_dict_get(sd, "nope", &missing), EMBER_ERR_KEY, "ember_state_dict_get", "nope");
  CHECK(none == NULL && missing == NULL);
  FAILS(ember_model_mlp(sizes, 1, &mlp2), EMBER_ERR_VALUE, "ember_model_mlp", "at least 2");

  /* A few SGD steps on a fixed batch lower the loss (autodiff on flex). */
  const float lv[2] = {0, 2};
  ember_tensor *labels = NULL, *lf = NULL;
  const int64_t ln[1] = {2};
  OK(ember_tensor_from_data(lv, EMBER_F32, ln, 1, NULL, &lf));
  OK(ember_tensor_to_dtype(lf, EMBER_I64, &labels));
  float first = 0, last = 0;
  OK(ember_module_train_step_sgd(mlp, x, labels, 0.1, &first));
  for (int i = 0; i < 20; ++i) OK(ember_module_train_step_sgd(mlp, x, labels, 0.1, &last));
  CHECK(last < first * 0.5f);

  free(bytes);
  ember_tensor_free(x);
  ember_tensor_free(y1);
  ember_tensor_free(y2);
  ember_tensor_free(img);
  ember_tensor_free(logits);
  ember_tensor_free(labels);
  ember_tensor_free(lf);
  ember_state_dict_free(sd);
  ember_state_dict_free(from_path);
  ember_state_dict_free(from_bytes);
  ember_module_free(mlp);
  ember_module_free(mlp2);
  ember_module_free(cnn);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: c_api_check WORK_DIR\n");
    return 2;
  }
  CHECK(strcmp(ember_version(), "0.0.0") != 0);
  CHECK(ember_dtype_size(EMBER_F32) == 4 && ember_dtype_size(EMBER_I64) == 8);
  CHECK(strcmp(ember_status_name(EMBER_ERR_SHAPE), "EMBER_ERR_SHAPE") == 0);
  ember_device* flex = NULL;
  const char* name = NULL;
  OK(ember_device_flex(&flex));
  OK(ember_device_name(flex, &name));
  CHECK(name && strcmp(name, "flex") == 0);
  ember_device_free(flex);
  tensors_and_ops();
  modules_and_files(argv[1]);
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  else printf("c_api_check: all checks passed\n");
  return failures ? 1 : 0;
}
