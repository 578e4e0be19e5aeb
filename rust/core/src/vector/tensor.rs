//! Tensors (`lance.index.pb.Tensor`): how pylance's vector indices keep centroids and
//! codebooks in a file's global buffers, in the vector column's element type.
use arrow_schema::DataType;

use crate::error::{Error, Result};
use crate::proto::index::{tensor, Tensor};

/// `values` as a tensor of `shape` in the column's element type.
pub fn tensor(values: &[f32], shape: Vec<u32>, element: &DataType) -> Tensor {
    let (data_type, data) = match element {
        DataType::Float16 => (
            tensor::DataType::Float16,
            values
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                .collect(),
        ),
        DataType::Float64 => (
            tensor::DataType::Float64,
            values
                .iter()
                .flat_map(|&v| (v as f64).to_le_bytes())
                .collect(),
        ),
        _ => (
            tensor::DataType::Float32,
            values.iter().flat_map(|&v| v.to_le_bytes()).collect(),
        ),
    };
    Tensor {
        data_type: data_type as i32,
        shape,
        data,
    }
}

/// A tensor's values as f32.
pub fn tensor_values(t: &Tensor, shown: &str, what: &str) -> Result<Vec<f32>> {
    let d = &t.data;
    let bad = || {
        Error::corrupt(
            shown,
            format!("{what}: {} bytes do not fit its type", d.len()),
        )
    };
    Ok(match tensor::DataType::try_from(t.data_type) {
        Ok(tensor::DataType::Float32) if d.len().is_multiple_of(4) => d
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect(),
        Ok(tensor::DataType::Float16) if d.len().is_multiple_of(2) => d
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes(b.try_into().expect("2 bytes")).to_f32())
            .collect(),
        Ok(tensor::DataType::Float64) if d.len().is_multiple_of(8) => d
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32)
            .collect(),
        Ok(tensor::DataType::Uint8) => d.iter().map(|&b| b as f32).collect(),
        Ok(tensor::DataType::Float32 | tensor::DataType::Float16 | tensor::DataType::Float64) => {
            return Err(bad())
        }
        _ => {
            return Err(Error::unsupported(
                shown,
                format!("{what} of tensor type {}", t.data_type),
            ))
        }
    })
}
