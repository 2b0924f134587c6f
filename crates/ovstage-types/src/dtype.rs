//! Element types in DLPack's terms.

use std::fmt;

raw_enum! {
    /// DLPack's type code (`DLDataTypeCode`).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
    #[allow(non_camel_case_types)]
    pub enum DTypeCode: u8 {
        /// Signed integer.
        Int = 0,
        /// Unsigned integer.
        UInt = 1,
        /// IEEE floating point.
        Float = 2,
        /// Opaque handle.
        OpaqueHandle = 3,
        /// bfloat16.
        Bfloat = 4,
        /// Complex (two floats).
        Complex = 5,
        /// Boolean.
        Bool = 6,
        /// FP8 e3m4.
        Float8_e3m4 = 7,
        /// FP8 e4m3.
        Float8_e4m3 = 8,
        /// FP8 e4m3b11fnuz.
        Float8_e4m3b11fnuz = 9,
        /// FP8 e4m3fn.
        Float8_e4m3fn = 10,
        /// FP8 e4m3fnuz.
        Float8_e4m3fnuz = 11,
        /// FP8 e5m2.
        Float8_e5m2 = 12,
        /// FP8 e5m2fnuz.
        Float8_e5m2fnuz = 13,
        /// FP8 e8m0fnu.
        Float8_e8m0fnu = 14,
        /// FP6 e2m3fn.
        Float6_e2m3fn = 15,
        /// FP6 e3m2fn.
        Float6_e3m2fn = 16,
        /// FP4 e2m1fn.
        Float4_e2m1fn = 17,
    }
}

impl DTypeCode {
    const fn short(self) -> &'static str {
        use DTypeCode::*;
        match self {
            Int => "i",
            UInt => "u",
            Float => "f",
            OpaqueHandle => "handle",
            Bfloat => "bf",
            Complex => "c",
            Bool => "bool",
            Float8_e3m4 => "f8e3m4_",
            Float8_e4m3 => "f8e4m3_",
            Float8_e4m3b11fnuz => "f8e4m3b11fnuz_",
            Float8_e4m3fn => "f8e4m3fn_",
            Float8_e4m3fnuz => "f8e4m3fnuz_",
            Float8_e5m2 => "f8e5m2_",
            Float8_e5m2fnuz => "f8e5m2fnuz_",
            Float8_e8m0fnu => "f8e8m0fnu_",
            Float6_e2m3fn => "f6e2m3fn_",
            Float6_e3m2fn => "f6e3m2fn_",
            Float4_e2m1fn => "f4e2m1fn_",
        }
    }
}

/// An element type: DLPack code, bits per lane and lanes.
///
/// In an attribute schema `lanes` is the tuple width of one row (3 for a
/// `float3`, 16 for a 4x4 matrix); read tensors instead report `lanes == 1`
/// with the components as trailing dimensions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DType {
    /// Type code.
    pub code: DTypeCode,
    /// Bits of one lane.
    pub bits: u8,
    /// Lanes (tuple components).
    pub lanes: u16,
}

impl DType {
    /// A type with explicit code, bits and lanes.
    pub const fn new(code: DTypeCode, bits: u8, lanes: u16) -> DType {
        DType { code, bits, lanes }
    }

    /// `f32` with one lane.
    pub const F32: DType = DType::new(DTypeCode::Float, 32, 1);
    /// `f64` with one lane.
    pub const F64: DType = DType::new(DTypeCode::Float, 64, 1);
    /// `i32` with one lane.
    pub const I32: DType = DType::new(DTypeCode::Int, 32, 1);
    /// `i64` with one lane.
    pub const I64: DType = DType::new(DTypeCode::Int, 64, 1);
    /// `u8` with one lane.
    pub const U8: DType = DType::new(DTypeCode::UInt, 8, 1);
    /// `u32` with one lane.
    pub const U32: DType = DType::new(DTypeCode::UInt, 32, 1);
    /// `u64` with one lane.
    pub const U64: DType = DType::new(DTypeCode::UInt, 64, 1);
    /// `bool` (8 bits) with one lane.
    pub const BOOL: DType = DType::new(DTypeCode::Bool, 8, 1);

    /// The same type with `lanes` lanes.
    pub const fn with_lanes(self, lanes: u16) -> DType {
        DType { lanes, ..self }
    }

    /// The same type with one lane.
    pub const fn scalar(self) -> DType {
        self.with_lanes(1)
    }

    /// Bytes of one lane, when a lane is a whole number of bytes.
    pub const fn lane_bytes(self) -> Option<usize> {
        if self.bits == 0 || !self.bits.is_multiple_of(8) { None } else { Some(self.bits as usize / 8) }
    }

    /// Whether an attribute can be stored with this element type: the
    /// scalar types of the ovstage 0.3.0 contract (int32, int64, uint8,
    /// uint32, uint64, float16, float32, float64, bool8), any lane count.
    pub const fn is_storable(self) -> bool {
        use DTypeCode::*;
        self.lanes > 0
            && matches!(
                (self.code, self.bits),
                (Int, 32 | 64) | (UInt, 8 | 32 | 64) | (Float, 16 | 32 | 64) | (Bool, 8)
            )
    }

    /// The storable scalar types, for messages.
    pub const STORABLE: &'static str = "int32, int64, uint8, uint32, uint64, float16, float32, float64, bool8";

    /// Bytes of one element (all lanes), when whole.
    pub const fn element_bytes(self) -> Option<usize> {
        match self.lane_bytes() {
            Some(b) if self.lanes > 0 => Some(b * self.lanes as usize),
            _ => None,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.code.short(), self.bits)?;
        if self.lanes != 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

/// The value of an IEEE 754 half-precision float given by its bits
/// (exact: every half is a double).
pub fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits >> 15 == 1 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_convert_exactly() {
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x3555), 0.333_251_953_125);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24), "the smallest subnormal");
        assert_eq!(f16_to_f64(0x7bff), 65504.0, "the largest finite half");
        assert_eq!(f16_to_f64(0xfc00), f64::NEG_INFINITY);
        assert!(f16_to_f64(0x7e00).is_nan());
        assert_eq!(f16_to_f64(0x8000).to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn codes_match_dlpack() {
        for raw in 0u8..=17 {
            assert_eq!(DTypeCode::from_raw(raw).map(|c| c as u8), Some(raw));
        }
        assert_eq!(DTypeCode::from_raw(18), None);
    }

    #[test]
    fn sizes_and_display() {
        assert_eq!(DType::F32.with_lanes(3).element_bytes(), Some(12));
        assert_eq!(DType::new(DTypeCode::Float4_e2m1fn, 4, 1).element_bytes(), None);
        assert_eq!(DType::F32.with_lanes(0).element_bytes(), None);
        assert_eq!(DType::F64.with_lanes(16).to_string(), "f64x16");
        assert_eq!(DType::U8.to_string(), "u8");
    }
}
