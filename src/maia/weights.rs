//! Reading an lc0 weight file (`.pb.gz`): gzip, then the protobuf message
//! `pblczero.Net`, of which only the subset a residual net with a
//! convolutional policy head needs is declared here (prost skips the rest).
//! Layer parameters are LINEAR16: each u16 `q` stands for
//! `q / 65535 * (max - min) + min`, decoded in f32 exactly as lc0 does, and
//! every batch norm is folded into its convolution at load, as lc0 does.

use anyhow::{Context, Result};
use std::io::Read;
use std::path::Path;

use crate::core::error::bad_input;

/// lc0's magic number at the head of every weight file.
const LC0_MAGIC: u32 = 0x1c0;
/// lc0's batch-norm epsilon.
const BN_EPSILON: f32 = 1e-5;

/// `pblczero.Net`.
#[derive(Clone, PartialEq, prost::Message)]
struct Net {
    #[prost(fixed32, optional, tag = "1")]
    magic: Option<u32>,
    #[prost(message, optional, tag = "4")]
    format: Option<Format>,
    #[prost(message, optional, tag = "10")]
    weights: Option<Weights>,
}

/// `pblczero.Format`.
#[derive(Clone, PartialEq, prost::Message)]
struct Format {
    #[prost(int32, optional, tag = "1")]
    weights_encoding: Option<i32>,
    #[prost(message, optional, tag = "2")]
    network_format: Option<NetworkFormat>,
}

/// `pblczero.NetworkFormat` (enums read as their numbers).
#[derive(Clone, PartialEq, prost::Message)]
struct NetworkFormat {
    #[prost(int32, optional, tag = "1")]
    input: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    network: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    policy: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    default_activation: Option<i32>,
}

/// `pblczero.Weights`: the body and the policy head (the value and
/// moves-left heads are not read).
#[derive(Clone, PartialEq, prost::Message)]
struct Weights {
    #[prost(message, optional, tag = "1")]
    input: Option<ConvBlock>,
    #[prost(message, repeated, tag = "2")]
    residual: Vec<Residual>,
    #[prost(message, optional, tag = "11")]
    policy1: Option<ConvBlock>,
    #[prost(message, optional, tag = "3")]
    policy: Option<ConvBlock>,
}

/// `pblczero.Weights.Layer`.
#[derive(Clone, PartialEq, prost::Message)]
struct Layer {
    #[prost(float, optional, tag = "1")]
    min_val: Option<f32>,
    #[prost(float, optional, tag = "2")]
    max_val: Option<f32>,
    #[prost(bytes = "vec", optional, tag = "3")]
    params: Option<Vec<u8>>,
}

/// `pblczero.Weights.ConvBlock`.
#[derive(Clone, PartialEq, prost::Message)]
struct ConvBlock {
    #[prost(message, optional, tag = "1")]
    weights: Option<Layer>,
    #[prost(message, optional, tag = "2")]
    biases: Option<Layer>,
    #[prost(message, optional, tag = "3")]
    bn_means: Option<Layer>,
    #[prost(message, optional, tag = "4")]
    bn_stddivs: Option<Layer>,
    #[prost(message, optional, tag = "5")]
    bn_gammas: Option<Layer>,
    #[prost(message, optional, tag = "6")]
    bn_betas: Option<Layer>,
}

/// `pblczero.Weights.SEunit`.
#[derive(Clone, PartialEq, prost::Message)]
struct SeUnit {
    #[prost(message, optional, tag = "1")]
    w1: Option<Layer>,
    #[prost(message, optional, tag = "2")]
    b1: Option<Layer>,
    #[prost(message, optional, tag = "3")]
    w2: Option<Layer>,
    #[prost(message, optional, tag = "4")]
    b2: Option<Layer>,
}

/// `pblczero.Weights.Residual`.
#[derive(Clone, PartialEq, prost::Message)]
struct Residual {
    #[prost(message, optional, tag = "1")]
    conv1: Option<ConvBlock>,
    #[prost(message, optional, tag = "2")]
    conv2: Option<ConvBlock>,
    #[prost(message, optional, tag = "3")]
    se: Option<SeUnit>,
}

/// A 3x3 convolution with its batch norm folded in: `weights` is
/// `[out][in][3][3]` as lc0 stores it, `biases` one per output channel.
#[derive(Clone, Debug)]
pub struct Conv3 {
    pub inputs: usize,
    pub outputs: usize,
    pub weights: Vec<f32>,
    pub biases: Vec<f32>,
}

/// A squeeze-excitation unit: `w1` is `[hidden][channels]`, `w2` is
/// `[2 * channels][hidden]` (scales, then shifts).
#[derive(Clone, Debug)]
pub struct SqueezeExcite {
    pub hidden: usize,
    pub w1: Vec<f32>,
    pub b1: Vec<f32>,
    pub w2: Vec<f32>,
    pub b2: Vec<f32>,
}

/// One residual block: two convolutions and the SE unit.
#[derive(Clone, Debug)]
pub struct ResidualBlock {
    pub conv1: Conv3,
    pub conv2: Conv3,
    pub se: SqueezeExcite,
}

/// The weights of a residual net with a convolutional policy head, decoded
/// and folded.
#[derive(Clone, Debug)]
pub struct NetWeights {
    pub filters: usize,
    pub input: Conv3,
    pub residual: Vec<ResidualBlock>,
    pub policy1: Conv3,
    pub policy: Conv3,
}

/// The input planes lc0's classical encoding feeds.
pub const INPUT_PLANES: usize = 112;

/// Reads and decodes the weight file at `path`. Every error names the file.
pub fn load(path: &Path) -> Result<NetWeights> {
    let file = std::fs::File::open(path)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", path.display())))?;
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut bytes)
        .map_err(|e| bad_input(format!("{}: not a gzip file: {e}", path.display())))?;
    parse(&bytes).map_err(|e| bad_input(format!("{}: {e:#}", path.display())))
}

/// Decodes an uncompressed `pblczero.Net`.
fn parse(bytes: &[u8]) -> Result<NetWeights> {
    let net = <Net as prost::Message>::decode(bytes)
        .context("not an lc0 weight file (protobuf decode failed)")?;
    if net.magic != Some(LC0_MAGIC) {
        anyhow::bail!("not an lc0 weight file (bad magic number)");
    }
    let format = net.format.unwrap_or_default();
    if format.weights_encoding.unwrap_or(1) != 1 {
        anyhow::bail!("weights are not LINEAR16-encoded");
    }
    let network = format.network_format.unwrap_or_default();
    // INPUT_CLASSICAL_112_PLANE = 1; POLICY_CONVOLUTION = 2;
    // NETWORK_SE_WITH_HEADFORMAT = 4; default activation RELU = 0.
    if network.input.unwrap_or(1) != 1 {
        anyhow::bail!(
            "input format {} is not lc0's classical 112-plane encoding",
            network.input.unwrap_or(0)
        );
    }
    if network.policy != Some(2) {
        anyhow::bail!(
            "policy head format {:?} is not convolutional (2)",
            network.policy
        );
    }
    if network.network != Some(4) {
        anyhow::bail!(
            "network structure {:?} is not a residual tower with SE units (4)",
            network.network
        );
    }
    if network.default_activation.unwrap_or(0) != 0 {
        anyhow::bail!("the default activation is not ReLU");
    }
    let weights = net.weights.context("no weights")?;
    let input = conv(weights.input.as_ref(), INPUT_PLANES, "input")?;
    let filters = input.outputs;
    let mut residual = Vec::with_capacity(weights.residual.len());
    for (i, block) in weights.residual.iter().enumerate() {
        let name = |part: &str| format!("residual block {i} {part}");
        let conv1 = conv(block.conv1.as_ref(), filters, &name("conv1"))?;
        let conv2 = conv(block.conv2.as_ref(), filters, &name("conv2"))?;
        if conv1.outputs != filters || conv2.outputs != filters {
            anyhow::bail!(
                "{} has {} filters, not {filters}",
                name("conv"),
                conv2.outputs
            );
        }
        let se = block
            .se
            .as_ref()
            .with_context(|| format!("{} is missing", name("SE unit")))?;
        let se = squeeze_excite(se, filters).with_context(|| name("SE unit"))?;
        residual.push(ResidualBlock { conv1, conv2, se });
    }
    if residual.is_empty() {
        anyhow::bail!("no residual blocks");
    }
    let policy1 = conv(weights.policy1.as_ref(), filters, "policy1")?;
    let policy = conv(weights.policy.as_ref(), policy1.outputs, "policy")?;
    if policy.outputs != super::policy::CONV_POLICY_PLANES {
        anyhow::bail!(
            "the policy head has {} planes, not {}",
            policy.outputs,
            super::policy::CONV_POLICY_PLANES
        );
    }
    Ok(NetWeights {
        filters,
        input,
        residual,
        policy1,
        policy,
    })
}

/// A layer's values (LINEAR16), empty when the layer is absent.
fn decode(layer: Option<&Layer>, what: &str) -> Result<Vec<f32>> {
    let Some(layer) = layer else {
        return Ok(Vec::new());
    };
    let params = layer.params.as_deref().unwrap_or_default();
    if params.len() % 2 != 0 {
        anyhow::bail!("{what}: odd number of parameter bytes");
    }
    let min = layer.min_val.unwrap_or(0.0);
    let range = layer.max_val.unwrap_or(0.0) - min;
    Ok(params
        .chunks_exact(2)
        .map(|q| f32::from(u16::from_le_bytes([q[0], q[1]])) / 65535.0 * range + min)
        .collect())
}

/// A 3x3 convolution block with `inputs` input channels, batch norm folded
/// into weights and biases as lc0's loader does.
fn conv(block: Option<&ConvBlock>, inputs: usize, what: &str) -> Result<Conv3> {
    let block = block.with_context(|| format!("{what} is missing"))?;
    let mut weights = decode(block.weights.as_ref(), what)?;
    let mut biases = decode(block.biases.as_ref(), what)?;
    let mut means = decode(block.bn_means.as_ref(), what)?;
    let variances = decode(block.bn_stddivs.as_ref(), what)?;
    let mut gammas = decode(block.bn_gammas.as_ref(), what)?;
    let mut betas = decode(block.bn_betas.as_ref(), what)?;
    let outputs = biases.len().max(means.len());
    if outputs == 0 || weights.len() != outputs * inputs * 9 {
        anyhow::bail!(
            "{what}: {} weights for {outputs} outputs of {inputs} channels x 3 x 3",
            weights.len()
        );
    }
    if biases.is_empty() {
        biases = vec![0.0; outputs];
    }
    if !means.is_empty() {
        if betas.is_empty() {
            betas = vec![0.0; outputs];
            gammas = vec![1.0; outputs];
        }
        if [variances.len(), gammas.len(), betas.len()] != [outputs; 3] {
            anyhow::bail!("{what}: batch-norm sizes do not match {outputs} outputs");
        }
        let per_output = inputs * 9;
        for o in 0..outputs {
            gammas[o] *= 1.0 / (variances[o] + BN_EPSILON).sqrt();
            means[o] -= biases[o];
            for w in &mut weights[o * per_output..(o + 1) * per_output] {
                *w *= gammas[o];
            }
            biases[o] = -gammas[o] * means[o] + betas[o];
        }
    }
    Ok(Conv3 {
        inputs,
        outputs,
        weights,
        biases,
    })
}

fn squeeze_excite(se: &SeUnit, channels: usize) -> Result<SqueezeExcite> {
    let w1 = decode(se.w1.as_ref(), "w1")?;
    let b1 = decode(se.b1.as_ref(), "b1")?;
    let w2 = decode(se.w2.as_ref(), "w2")?;
    let b2 = decode(se.b2.as_ref(), "b2")?;
    let hidden = b1.len();
    if hidden == 0
        || w1.len() != hidden * channels
        || w2.len() != 2 * channels * hidden
        || b2.len() != 2 * channels
    {
        anyhow::bail!("sizes do not fit {channels} channels");
    }
    Ok(SqueezeExcite {
        hidden,
        w1,
        b1,
        w2,
        b2,
    })
}
