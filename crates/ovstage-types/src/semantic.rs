//! The authored interpretation of an attribute's bytes.

raw_enum! {
    /// What a column's values mean (point versus plain float3, asset versus
    /// string, ...), orthogonal to its dtype. Recorded when an attribute is
    /// created and part of its schema.
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub enum Semantic: u32 {
        /// No interpretation recorded.
        #[default]
        None = 0,
        /// `(authored, resolved)` token ids of an asset path.
        AssetPathId = 1,
        /// One token id per row.
        TokenId = 2,
        /// The token id of a path expression's text.
        PathExpressionString = 3,
        /// Path ids of relationship targets.
        RelationshipPathId = 4,
        /// A position.
        Point = 5,
        /// A direction.
        Vector = 6,
        /// A surface normal.
        Normal = 7,
        /// A color.
        Color = 8,
        /// A quaternion, imaginary parts first, real part last.
        Quaternion = 9,
        /// A square matrix; reads expose it as `[N, S, S]`.
        Matrix = 10,
        /// A texture coordinate.
        TextureCoordinate = 11,
        /// `(path id, token id)` of a connection.
        ConnectionPathId = 12,
        /// A UTF-8 string stored as a ragged byte array.
        String = 13,
        /// A unitless time code.
        TimeCode = 14,
        /// A coordinate frame.
        Frame = 15,
    }
}

impl Semantic {
    /// The contract's name without prefix, e.g. `MATRIX`.
    pub const fn name(self) -> &'static str {
        match self {
            Semantic::None => "NONE",
            Semantic::AssetPathId => "ASSET_PATH_ID",
            Semantic::TokenId => "TOKEN_ID",
            Semantic::PathExpressionString => "PATH_EXPRESSION_STRING",
            Semantic::RelationshipPathId => "RELATIONSHIP_PATH_ID",
            Semantic::Point => "POINT",
            Semantic::Vector => "VECTOR",
            Semantic::Normal => "NORMAL",
            Semantic::Color => "COLOR",
            Semantic::Quaternion => "QUATERNION",
            Semantic::Matrix => "MATRIX",
            Semantic::TextureCoordinate => "TEXTURE_COORDINATE",
            Semantic::ConnectionPathId => "CONNECTION_PATH_ID",
            Semantic::String => "STRING",
            Semantic::TimeCode => "TIME_CODE",
            Semantic::Frame => "FRAME",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_values_in_order() {
        for (i, s) in Semantic::ALL.iter().enumerate() {
            assert_eq!(*s as u32, i as u32);
            assert_eq!(Semantic::from_raw(i as u32), Some(*s));
        }
        assert_eq!(Semantic::from_raw(16), None);
        assert_eq!(Semantic::Matrix as u32, 10);
        assert_eq!(Semantic::Frame as u32, 15);
    }
}
