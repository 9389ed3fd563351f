//! A catalog query's compiled expressions: typed, with column references resolved to a
//! scope level and a position in that level's row.

use super::functions::ScalarFunc;
use super::plan::QueryPlan;
use super::types::{CType, Datum};

/// A compiled expression and its type.
#[derive(Debug)]
pub(crate) struct CExpr {
    pub kind: ExprKind,
    pub ty: CType,
}

impl CExpr {
    pub fn new(kind: ExprKind, ty: CType) -> CExpr {
        CExpr { kind, ty }
    }

    pub fn constant(datum: Datum, ty: CType) -> CExpr {
        CExpr::new(ExprKind::Const(datum), ty)
    }

    /// This expression cast to `ty` (nothing to do if it has that type already).
    pub fn cast_to(self, ty: CType) -> CExpr {
        if self.ty == ty {
            return self;
        }
        match self.kind {
            // A parameter takes the type its context needs: that is the type it is sent as.
            ExprKind::Param(i) if self.ty == CType::Unknown => CExpr::new(ExprKind::Param(i), ty),
            _ => CExpr::new(ExprKind::Cast(Box::new(self)), ty),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    /// The operator as SQL writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "<>",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// A subquery in an expression. An uncorrelated one (reading no outer row) runs once per
/// execution; its rows are kept under `id`.
#[derive(Debug)]
pub(crate) struct SubPlan {
    pub plan: QueryPlan,
    pub id: usize,
    /// The outer (level, column) pairs it reads.
    pub outer_reads: Vec<(usize, usize)>,
}

#[derive(Debug)]
pub(crate) enum ExprKind {
    Const(Datum),
    Column {
        level: usize,
        index: usize,
    },
    /// `$n` (0-based).
    Param(usize),
    Not(Box<CExpr>),
    And(Box<CExpr>, Box<CExpr>),
    Or(Box<CExpr>, Box<CExpr>),
    Compare(CmpOp, Box<CExpr>, Box<CExpr>),
    /// `IS NULL`, or `IS NOT NULL` when true.
    IsNull(Box<CExpr>, bool),
    /// `IS [NOT] TRUE/FALSE`: the value tested for, and whether negated.
    IsBool(Box<CExpr>, bool, bool),
    /// `IS DISTINCT FROM`, or `IS NOT DISTINCT FROM` when true.
    Distinct(Box<CExpr>, Box<CExpr>, bool),
    Arith(ArithOp, Box<CExpr>, Box<CExpr>),
    Neg(Box<CExpr>),
    /// `||` of strings (`true`) or of arrays.
    Concat(Box<CExpr>, Box<CExpr>, bool),
    Regex {
        expr: Box<CExpr>,
        pattern: Box<CExpr>,
        negated: bool,
        case_insensitive: bool,
    },
    Like {
        expr: Box<CExpr>,
        pattern: Box<CExpr>,
        negated: bool,
        case_insensitive: bool,
    },
    InList(Box<CExpr>, Vec<CExpr>, bool),
    InSubquery(Box<CExpr>, Box<SubPlan>, bool),
    Exists(Box<SubPlan>),
    ScalarSubquery(Box<SubPlan>),
    ArraySubquery(Box<SubPlan>),
    Array(Vec<CExpr>),
    /// `left op ANY (array)`, or `ALL` when true.
    AnyArray(Box<CExpr>, CmpOp, Box<CExpr>, bool),
    Case {
        operand: Option<Box<CExpr>>,
        whens: Vec<(CExpr, CExpr)>,
        otherwise: Option<Box<CExpr>>,
    },
    /// The inner expression cast to this expression's type.
    Cast(Box<CExpr>),
    /// `array[index]`, 1-based.
    Subscript(Box<CExpr>, Box<CExpr>),
    Call(ScalarFunc, Vec<CExpr>),
    /// The value of window call `index` of the SELECT at `level` for the current row
    /// (`window.rs`: the row carries its window values at its end, the last call first).
    Window {
        level: usize,
        index: usize,
    },
    /// The current row's value of set-returning call `index` of the SELECT at `level`'s
    /// list (`compile::SetCall`).
    SetValue {
        level: usize,
        index: usize,
    },
}

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum AggFunc {
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    Avg,
    StringAgg,
    ArrayAgg,
    BoolAnd,
    BoolOr,
}

impl AggFunc {
    pub fn by_name(name: &str) -> Option<AggFunc> {
        Some(match name {
            "count" => AggFunc::Count,
            "sum" => AggFunc::Sum,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "avg" => AggFunc::Avg,
            "string_agg" => AggFunc::StringAgg,
            "array_agg" => AggFunc::ArrayAgg,
            "bool_and" | "every" => AggFunc::BoolAnd,
            "bool_or" => AggFunc::BoolOr,
            _ => return None,
        })
    }
}

/// One aggregate of a grouped SELECT.
#[derive(Debug)]
pub(crate) struct AggSpec {
    pub func: AggFunc,
    pub args: Vec<CExpr>,
    pub distinct: bool,
    pub ty: CType,
    /// `agg(x ORDER BY k)`: the order its rows are fed in (each key a `SortBy::Expr`).
    pub order: Vec<super::plan::SortKey>,
    /// `agg(x) FILTER (WHERE c)`: only the rows c holds for are fed.
    pub filter: Option<CExpr>,
}

impl AggSpec {
    /// Calls `f` on every expression the aggregate evaluates for a row.
    pub fn walk(&self, f: &mut dyn FnMut(&CExpr)) {
        self.args.iter().chain(&self.filter).for_each(|e| e.walk(f));
        for key in &self.order {
            if let super::plan::SortBy::Expr(e) = &key.by {
                e.walk(f);
            }
        }
    }
}

impl CExpr {
    /// Calls `f` on this expression and on every expression inside it, those of its
    /// subqueries included.
    pub fn walk(&self, f: &mut dyn FnMut(&CExpr)) {
        use ExprKind as K;
        f(self);
        match &self.kind {
            K::Const(_)
            | K::Column { .. }
            | K::Param(_)
            | K::Window { .. }
            | K::SetValue { .. } => {}
            K::Not(a) | K::IsNull(a, _) | K::IsBool(a, ..) | K::Neg(a) | K::Cast(a) => a.walk(f),
            K::And(a, b)
            | K::Or(a, b)
            | K::Compare(_, a, b)
            | K::Distinct(a, b, _)
            | K::Arith(_, a, b)
            | K::Concat(a, b, _)
            | K::Subscript(a, b)
            | K::AnyArray(a, _, b, _)
            | K::Regex {
                expr: a,
                pattern: b,
                ..
            }
            | K::Like {
                expr: a,
                pattern: b,
                ..
            } => {
                a.walk(f);
                b.walk(f);
            }
            K::InList(a, items, _) => {
                a.walk(f);
                items.iter().for_each(|i| i.walk(f));
            }
            K::InSubquery(a, sub, _) => {
                a.walk(f);
                sub.plan.walk(f);
            }
            K::Exists(sub) | K::ScalarSubquery(sub) | K::ArraySubquery(sub) => sub.plan.walk(f),
            K::Array(items) | K::Call(_, items) => items.iter().for_each(|i| i.walk(f)),
            K::Case {
                operand,
                whens,
                otherwise,
            } => {
                operand.iter().for_each(|o| o.walk(f));
                for (c, r) in whens {
                    c.walk(f);
                    r.walk(f);
                }
                otherwise.iter().for_each(|o| o.walk(f));
            }
        }
    }
}
