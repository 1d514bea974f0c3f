#pragma once
// Linear algebra with torch.linalg's names, argument order and defaults: ember::linalg::solve,
// svd, eigh, ... plus the top-level forms libtorch has (ember::inverse, det, trace, diag, ...).
// Every function takes a batch: matrices are the last two dims, leading dims are the batch
// (broadcast where torch broadcasts them). Inputs are float32, float64, complex64 or complex128
// (complex on the host devices, flex and cpu; docs/linalg.md lists the result dtypes). Singular
// input to inv/solve/lu_factor and non-positive-definite input to cholesky throw ValueError naming
// the op and the batch element. eig/eigvals take real or complex input and return complex results.
#include <optional>
#include <string>
#include <tuple>

#include "ember/tensor.h"

namespace ember::linalg {

/// The inverse of each square matrix (ValueError if one is singular).
Tensor inv(const Tensor& A);
/// X with A X = B (left) or X A = B (left = false). B is a matrix batch [..., n, k], or vectors
/// when B is 1-D or has A's shape without its last dim. Batch dims broadcast.
Tensor solve(const Tensor& A, const Tensor& B, bool left = true);
/// Determinant (0 for a singular matrix; 1 for 0 x 0).
Tensor det(const Tensor& A);
/// (sign, log|det|): sign is -1, 0 or 1; log|det| is -inf for a singular matrix.
std::tuple<Tensor, Tensor> slogdet(const Tensor& A);
/// L with A = L L^T (or U with A = U^T U when upper), reading only that triangle of A.
Tensor cholesky(const Tensor& A, bool upper = false);
/// (Q, R) with A = Q R; mode "reduced" (Q [m,k], R [k,n], k = min(m,n)), "complete" (Q [m,m],
/// R [m,n]) or "r" (R only; Q is empty).
std::tuple<Tensor, Tensor> qr(const Tensor& A, const std::string& mode = "reduced");
/// (U, S, Vh) with A = U diag(S) Vh, S descending. full_matrices: U [m,m], Vh [n,n]; otherwise
/// U [m,k], Vh [k,n]. Singular vectors are unique only up to sign.
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices = true);
/// The singular values, descending.
Tensor svdvals(const Tensor& A);
/// (eigenvalues ascending, eigenvectors as columns) of a symmetric matrix, reading the lower
/// (UPLO = "L") or upper ("U") triangle only.
std::tuple<Tensor, Tensor> eigh(const Tensor& A, const std::string& UPLO = "L");
/// The eigenvalues of eigh, ascending.
Tensor eigvalsh(const Tensor& A, const std::string& UPLO = "L");
/// (eigenvalues, eigenvectors as columns) of a general square matrix, real or complex: both
/// complex (c64 for f32 input, c128 for f64), eigenvectors of norm 1 with LAPACK's phase, the
/// eigenvalues in LAPACK's order (not sorted), as torch.linalg.eig.
std::tuple<Tensor, Tensor> eig(const Tensor& A);
/// The eigenvalues of eig.
Tensor eigvals(const Tensor& A);
/// Least squares min ||A X - B|| (B a matrix batch, or vectors when it has A's shape without its
/// last dim): (solution, residuals, rank, singular_values) as torch returns
/// them for `driver`: "gelsy" (the CPU default: rank, no residuals or singular values), "gels"
/// (residuals when m > n), "gelsd"/"gelss" (rank, singular values, and residuals when m > n and
/// every matrix has full rank: a sync point, the rank is read on the host). rcond defaults to
/// eps(dtype) * max(m, n). The solution is the minimum-norm one.
std::tuple<Tensor, Tensor, Tensor, Tensor> lstsq(const Tensor& A, const Tensor& B,
                                                 std::optional<double> rcond = std::nullopt,
                                                 const std::optional<std::string>& driver = std::nullopt);
/// Moore-Penrose pseudo-inverse: singular values at or below max(atol, rtol * largest) are
/// dropped (rtol defaults to eps * max(m, n), or 0 when only atol is given); `hermitian` uses
/// eigh on the lower triangle.
Tensor pinv(const Tensor& A, std::optional<double> atol = std::nullopt,
            std::optional<double> rtol = std::nullopt, bool hermitian = false);
/// The number of singular values above max(atol, rtol * largest) (int64), tolerances as pinv.
Tensor matrix_rank(const Tensor& A, std::optional<double> atol = std::nullopt,
                   std::optional<double> rtol = std::nullopt, bool hermitian = false);
/// (LU, pivots): A = P L U packed as LAPACK's getrf does, pivots int32 and 1-based.
std::tuple<Tensor, Tensor> lu_factor(const Tensor& A, bool pivot = true);
/// X with A X = B (left) or X A = B, A given by lu_factor; adjoint solves with A^T.
Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left = true,
                bool adjoint = false);
/// X with A X = B (left) or X A = B for triangular A (only its triangle is read; its diagonal
/// is taken as ones when unitriangular).
Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left = true,
                        bool unitriangular = false);
/// Matrix norm over `dim`: ord "fro" or "nuc".
Tensor matrix_norm(const Tensor& A, const std::string& ord = "fro", const Shape& dim = {-2, -1},
                   bool keepdim = false);
/// Matrix norm over `dim`: ord 1, -1, 2, -2, inf or -inf (max/min column sum, singular value,
/// row sum).
Tensor matrix_norm(const Tensor& A, double ord, const Shape& dim = {-2, -1}, bool keepdim = false);
/// Vector p-norm over `dim` (all elements when empty): ord inf, -inf, 0 and any real p.
Tensor vector_norm(const Tensor& x, double ord = 2, const Shape& dim = {}, bool keepdim = false,
                   std::optional<DType> dtype = std::nullopt);
/// Cross product of 3-vectors along `dim` (inputs broadcast).
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim = -1);
/// A^n for an integer n (n < 0 inverts first; n = 0 gives identities).
Tensor matrix_power(const Tensor& A, int64_t n);
/// The matrix exponential.
Tensor matrix_exp(const Tensor& A);
/// Diagonals of matrices over dims (dim1, dim2) (torch.linalg.diagonal's defaults).
Tensor diagonal(const Tensor& A, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);

}  // namespace ember::linalg

namespace ember {

/// torch.inverse: linalg::inv.
Tensor inverse(const Tensor& A);
/// torch.det: linalg::det.
Tensor det(const Tensor& A);
/// torch.logdet: log(det), NaN for a negative determinant.
Tensor logdet(const Tensor& A);
/// torch.slogdet: linalg::slogdet.
std::tuple<Tensor, Tensor> slogdet(const Tensor& A);
/// torch.cholesky: linalg::cholesky.
Tensor cholesky(const Tensor& A, bool upper = false);
/// torch.pinverse: linalg::pinv with rtol = rcond.
Tensor pinverse(const Tensor& A, double rcond = 1e-15);
/// Sum of the main diagonal of a 2-D tensor (int inputs sum to int64, as torch does).
Tensor trace(const Tensor& x);
/// 1-D x: a square matrix with x on diagonal `diagonal`; 2-D x: that diagonal of x.
Tensor diag(const Tensor& x, int64_t diagonal = 0);
/// Matrices with the last dim of x on their diagonal `offset`, placed at dims (dim1, dim2) of
/// the result.
Tensor diag_embed(const Tensor& x, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
/// linalg::matrix_power.
Tensor matrix_power(const Tensor& A, int64_t n);
/// linalg::matrix_exp.
Tensor matrix_exp(const Tensor& A);
/// torch.cross: along `dim`, or the first dim of size 3 when none is given.
Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim = std::nullopt);

}  // namespace ember
