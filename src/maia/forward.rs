//! The forward pass of one net over a batch of positions, on the CPU: the
//! input convolution, the residual tower with squeeze-excitation, and the
//! convolutional policy head (the value head is not computed). The tower's
//! output averaged over the squares (one value per filter) is kept too: a
//! summary of how the net reads the board, which the rating model uses.
//!
//! Activations are kept square-major (`[position * 64 + square][channel]`),
//! so a 3x3 convolution is one im2col copy and one matrix product
//! (`matrixmultiply`). Each output row depends on its own position only and
//! the product's blocking does not depend on the number of rows, so a
//! position's result is the same bits whatever batch it is computed in.

use super::weights::{Conv3, NetWeights, ResidualBlock};

const SQUARES: usize = 64;

/// A 3x3 convolution laid out for im2col: `weights[o][k * inputs + c]` with
/// `k = ky * 3 + kx`.
#[derive(Clone, Debug)]
struct PreparedConv {
    inputs: usize,
    outputs: usize,
    weights: Vec<f32>,
    biases: Vec<f32>,
}

impl PreparedConv {
    fn new(conv: &Conv3) -> PreparedConv {
        let (inputs, outputs) = (conv.inputs, conv.outputs);
        let depth = inputs * 9;
        let mut weights = vec![0.0; outputs * depth];
        for o in 0..outputs {
            for c in 0..inputs {
                for k in 0..9 {
                    weights[o * depth + k * inputs + c] = conv.weights[(o * inputs + c) * 9 + k];
                }
            }
        }
        PreparedConv {
            inputs,
            outputs,
            weights,
            biases: conv.biases.clone(),
        }
    }

    /// `out[row][o] = sum over the 3x3 neighbourhood of input`, plus the
    /// bias, with ReLU when `relu`. `input` is `[rows][inputs]`, rows a
    /// multiple of 64.
    fn forward(&self, input: &[f32], rows: usize, relu: bool, col: &mut Vec<f32>, out: &mut [f32]) {
        let depth = self.inputs * 9;
        im2col(input, rows, self.inputs, col);
        // SAFETY: the slices hold exactly rows x depth, depth x outputs and
        // rows x outputs elements at the strides given.
        unsafe {
            matrixmultiply::sgemm(
                rows,
                depth,
                self.outputs,
                1.0,
                col.as_ptr(),
                depth as isize,
                1,
                self.weights.as_ptr(),
                1,
                depth as isize,
                0.0,
                out.as_mut_ptr(),
                self.outputs as isize,
                1,
            );
        }
        for row in out[..rows * self.outputs].chunks_exact_mut(self.outputs) {
            for (v, b) in row.iter_mut().zip(&self.biases) {
                *v += b;
                if relu && *v < 0.0 {
                    *v = 0.0;
                }
            }
        }
    }
}

/// Copies each square's 3x3 neighbourhood (zeros off the board) into one
/// row: `col[row][k * channels + c]`.
fn im2col(input: &[f32], rows: usize, channels: usize, col: &mut Vec<f32>) {
    let depth = channels * 9;
    col.clear();
    col.resize(rows * depth, 0.0);
    for board in 0..rows / SQUARES {
        let base = board * SQUARES;
        for square in 0..SQUARES {
            let (rank, file) = ((square / 8) as i32, (square % 8) as i32);
            let dest = &mut col[(base + square) * depth..(base + square + 1) * depth];
            for ky in 0..3 {
                let r = rank + ky - 1;
                if !(0..8).contains(&r) {
                    continue;
                }
                for kx in 0..3 {
                    let f = file + kx - 1;
                    if !(0..8).contains(&f) {
                        continue;
                    }
                    let k = (ky * 3 + kx) as usize;
                    let from = base + (r * 8 + f) as usize;
                    dest[k * channels..(k + 1) * channels]
                        .copy_from_slice(&input[from * channels..(from + 1) * channels]);
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
struct PreparedBlock {
    conv1: PreparedConv,
    conv2: PreparedConv,
    hidden: usize,
    w1: Vec<f32>,
    b1: Vec<f32>,
    w2: Vec<f32>,
    b2: Vec<f32>,
}

/// A net ready to run.
#[derive(Clone, Debug)]
pub struct Network {
    filters: usize,
    input: PreparedConv,
    blocks: Vec<PreparedBlock>,
    policy1: PreparedConv,
    policy: PreparedConv,
}

/// Buffers reused across calls.
#[derive(Default)]
pub struct Scratch {
    col: Vec<f32>,
    x: Vec<f32>,
    t: Vec<f32>,
    u: Vec<f32>,
}

impl Network {
    pub fn new(weights: &NetWeights) -> Network {
        let block = |b: &ResidualBlock| PreparedBlock {
            conv1: PreparedConv::new(&b.conv1),
            conv2: PreparedConv::new(&b.conv2),
            hidden: b.se.hidden,
            w1: b.se.w1.clone(),
            b1: b.se.b1.clone(),
            w2: b.se.w2.clone(),
            b2: b.se.b2.clone(),
        };
        Network {
            filters: weights.filters,
            input: PreparedConv::new(&weights.input),
            blocks: weights.residual.iter().map(block).collect(),
            policy1: PreparedConv::new(&weights.policy1),
            policy: PreparedConv::new(&weights.policy),
        }
    }

    /// Planes of the policy head's output per square.
    pub fn policy_planes(&self) -> usize {
        self.policy.outputs
    }

    /// Filters of the residual tower: the length of a board's pooled
    /// output.
    pub fn filters(&self) -> usize {
        self.filters
    }

    /// Runs the net on `boards` positions: `input` is
    /// `[board * 64 + square][input plane]`; `policy` receives
    /// `[board * 64 + square][policy plane]` and `pooled` the tower's
    /// output averaged over the squares, `[board][filter]`.
    pub fn forward(
        &self,
        boards: usize,
        input: &[f32],
        scratch: &mut Scratch,
        policy: &mut Vec<f32>,
        pooled: &mut Vec<f32>,
    ) {
        let rows = boards * SQUARES;
        let c = self.filters;
        let Scratch { col, x, t, u } = scratch;
        for buffer in [&mut *x, &mut *t, &mut *u] {
            buffer.clear();
            buffer.resize(rows * c, 0.0);
        }
        self.input.forward(input, rows, true, col, x);
        for block in &self.blocks {
            block.conv1.forward(x, rows, true, col, t);
            block.conv2.forward(t, rows, false, col, u);
            block.excite_and_add(boards, c, u, x);
        }
        pooled.clear();
        pooled.resize(boards * c, 0.0);
        for (board, sums) in pooled.chunks_exact_mut(c).enumerate() {
            for square in x[board * SQUARES * c..(board + 1) * SQUARES * c].chunks_exact(c) {
                for (sum, v) in sums.iter_mut().zip(square) {
                    *sum += v;
                }
            }
            for sum in sums.iter_mut() {
                *sum /= SQUARES as f32;
            }
        }
        self.policy1.forward(x, rows, true, col, t);
        policy.clear();
        policy.resize(rows * self.policy.outputs, 0.0);
        self.policy.forward(t, rows, false, col, policy);
    }
}

impl PreparedBlock {
    /// The squeeze-excitation unit on `u` (conv2's output with its bias),
    /// then the residual: `x = relu(sigmoid(scale) * u + shift + x)`.
    fn excite_and_add(&self, boards: usize, channels: usize, u: &[f32], x: &mut [f32]) {
        let mut pooled = vec![0.0f32; channels];
        let mut hidden = vec![0.0f32; self.hidden];
        let mut excite = vec![0.0f32; 2 * channels];
        for board in 0..boards {
            let rows = board * SQUARES * channels..(board + 1) * SQUARES * channels;
            let (u, x) = (&u[rows.clone()], &mut x[rows]);
            pooled.fill(0.0);
            for square in u.chunks_exact(channels) {
                for (p, v) in pooled.iter_mut().zip(square) {
                    *p += v;
                }
            }
            for p in &mut pooled {
                *p /= SQUARES as f32;
            }
            for (h, (w, b)) in hidden
                .iter_mut()
                .zip(self.w1.chunks_exact(channels).zip(&self.b1))
            {
                let sum: f32 = w.iter().zip(&pooled).map(|(w, p)| w * p).sum::<f32>() + b;
                *h = sum.max(0.0);
            }
            for (e, (w, b)) in excite
                .iter_mut()
                .zip(self.w2.chunks_exact(self.hidden).zip(&self.b2))
            {
                *e = w.iter().zip(&hidden).map(|(w, h)| w * h).sum::<f32>() + b;
            }
            let (scale, shift) = excite.split_at(channels);
            let gamma: Vec<f32> = scale.iter().map(|s| 1.0 / (1.0 + (-s).exp())).collect();
            for (xs, us) in x.chunks_exact_mut(channels).zip(u.chunks_exact(channels)) {
                for ch in 0..channels {
                    xs[ch] = (gamma[ch] * us[ch] + shift[ch] + xs[ch]).max(0.0);
                }
            }
        }
    }
}
