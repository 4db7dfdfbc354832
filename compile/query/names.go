package query

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// unnamed is the name PostgreSQL gives a column it cannot name.
const unnamed = "?column?"

// figureColname mirrors PostgreSQL's FigureColname (parse_target.c): the name
// a target without AS gets. BY NAME matching depends on it, so it must agree
// with the server. ok is false when PostgreSQL falls back to ?column?.
func figureColname(n *pg.Node) (name string, ok bool) {
	name, strength := figureColnameInternal(n, 0)
	if strength == 0 || name == "" {
		return unnamed, false
	}
	return name, true
}

// figureColnameInternal returns a name and its strength as in PostgreSQL: 2
// for a real name (column, function), 1 for a weak guess (a type name, CASE)
// that a stronger inner name overrides, 0 for none.
func figureColnameInternal(n *pg.Node, depth int) (string, int) {
	if n == nil || depth > maxDepth {
		return "", 0
	}
	switch v := n.GetNode().(type) {
	case *pg.Node_ColumnRef:
		// The last field name, ignoring `*`.
		if s := lastString(v.ColumnRef.GetFields()); s != "" {
			return s, 2
		}
	case *pg.Node_AIndirection:
		if s := lastString(v.AIndirection.GetIndirection()); s != "" {
			return s, 2
		}
		return figureColnameInternal(v.AIndirection.GetArg(), depth+1)
	case *pg.Node_FuncCall:
		return lastString(v.FuncCall.GetFuncname()), 2
	case *pg.Node_AExpr:
		if v.AExpr.GetKind() == pg.A_Expr_Kind_AEXPR_NULLIF {
			return "nullif", 2
		}
	case *pg.Node_TypeCast:
		name, strength := figureColnameInternal(v.TypeCast.GetArg(), depth+1)
		if strength <= 1 && v.TypeCast.GetTypeName() != nil {
			return lastString(v.TypeCast.GetTypeName().GetNames()), 1
		}
		return name, strength
	case *pg.Node_CollateClause:
		return figureColnameInternal(v.CollateClause.GetArg(), depth+1)
	case *pg.Node_GroupingFunc:
		return "grouping", 2
	case *pg.Node_MergeSupportFunc:
		return "merge_action", 2
	case *pg.Node_SubLink:
		switch v.SubLink.GetSubLinkType() {
		case pg.SubLinkType_EXISTS_SUBLINK:
			return "exists", 2
		case pg.SubLinkType_ARRAY_SUBLINK:
			return "array", 2
		case pg.SubLinkType_EXPR_SUBLINK:
			// PostgreSQL names it after the subquery's single output column.
			// If that comes from a `*` we cannot know it: report no name,
			// which only makes rwc ask for an alias.
			if sel := v.SubLink.GetSubselect().GetSelectStmt(); sel != nil {
				if t := firstTarget(sel); t != nil {
					if t.GetName() != "" {
						return t.GetName(), 2
					}
					if !isStar(t.GetVal()) {
						if name, ok := figureColname(t.GetVal()); ok {
							return name, 2
						}
					}
				}
			}
		}
	case *pg.Node_CaseExpr:
		name, strength := figureColnameInternal(v.CaseExpr.GetDefresult(), depth+1)
		if strength <= 1 {
			return "case", 1
		}
		return name, strength
	case *pg.Node_AArrayExpr:
		return "array", 2
	case *pg.Node_RowExpr:
		return "row", 2
	case *pg.Node_CoalesceExpr:
		return "coalesce", 2
	case *pg.Node_MinMaxExpr:
		switch v.MinMaxExpr.GetOp() {
		case pg.MinMaxOp_IS_GREATEST:
			return "greatest", 2
		case pg.MinMaxOp_IS_LEAST:
			return "least", 2
		}
	case *pg.Node_SqlvalueFunction:
		if name, ok := sqlValueFunctionNames[v.SqlvalueFunction.GetOp()]; ok {
			return name, 2
		}
	case *pg.Node_XmlExpr:
		if name, ok := xmlExprNames[v.XmlExpr.GetOp()]; ok {
			return name, 2
		}
	case *pg.Node_XmlSerialize:
		return "xmlserialize", 2
	case *pg.Node_JsonParseExpr:
		return "json", 2
	case *pg.Node_JsonScalarExpr:
		return "json_scalar", 2
	case *pg.Node_JsonSerializeExpr:
		return "json_serialize", 2
	case *pg.Node_JsonObjectConstructor:
		return "json_object", 2
	case *pg.Node_JsonArrayConstructor, *pg.Node_JsonArrayQueryConstructor:
		return "json_array", 2
	case *pg.Node_JsonObjectAgg:
		return "json_objectagg", 2
	case *pg.Node_JsonArrayAgg:
		return "json_arrayagg", 2
	case *pg.Node_JsonFuncExpr:
		switch v.JsonFuncExpr.GetOp() {
		case pg.JsonExprOp_JSON_EXISTS_OP:
			return "json_exists", 2
		case pg.JsonExprOp_JSON_QUERY_OP:
			return "json_query", 2
		case pg.JsonExprOp_JSON_VALUE_OP:
			return "json_value", 2
		}
	}
	return "", 0
}

var sqlValueFunctionNames = map[pg.SQLValueFunctionOp]string{
	pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:        "current_date",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME:        "current_time",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N:      "current_time",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP:   "current_timestamp",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N: "current_timestamp",
	pg.SQLValueFunctionOp_SVFOP_LOCALTIME:           "localtime",
	pg.SQLValueFunctionOp_SVFOP_LOCALTIME_N:         "localtime",
	pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP:      "localtimestamp",
	pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:    "localtimestamp",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:        "current_role",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_USER:        "current_user",
	pg.SQLValueFunctionOp_SVFOP_USER:                "user",
	pg.SQLValueFunctionOp_SVFOP_SESSION_USER:        "session_user",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:     "current_catalog",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:      "current_schema",
}

var xmlExprNames = map[pg.XmlExprOp]string{
	pg.XmlExprOp_IS_XMLCONCAT:    "xmlconcat",
	pg.XmlExprOp_IS_XMLELEMENT:   "xmlelement",
	pg.XmlExprOp_IS_XMLFOREST:    "xmlforest",
	pg.XmlExprOp_IS_XMLPARSE:     "xmlparse",
	pg.XmlExprOp_IS_XMLPI:        "xmlpi",
	pg.XmlExprOp_IS_XMLROOT:      "xmlroot",
	pg.XmlExprOp_IS_XMLSERIALIZE: "xmlserialize",
}

// lastString is the last String node in a name list (`a.b.c` → c); "" if
// there is none (e.g. `t.*`).
func lastString(nodes []*pg.Node) string {
	s := ""
	for _, n := range nodes {
		if str := n.GetString_(); str != nil {
			s = str.GetSval()
		}
	}
	return s
}

// stringList returns the String values of a name list, and false if any
// element is not a String (a `*` or a subscript).
func stringList(nodes []*pg.Node) ([]string, bool) {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		str := n.GetString_()
		if str == nil {
			return nil, false
		}
		out = append(out, str.GetSval())
	}
	return out, true
}

// quoteIdent quotes a name for use in SQL the way PostgreSQL's quote_ident
// does: only when needed. A name is safe bare when it is lower-case letters,
// digits, _ and $ (not leading) and not a keyword. Keywords are found with
// PostgreSQL's own scanner; every keyword is quoted, which is never wrong.
func quoteIdent(name string) string {
	if name != "" && plainIdent(name) && !isKeyword(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// quoteLabel quotes a column name that follows a dot: there every keyword
// is accepted bare (attr_name is ColLabel in the grammar).
func quoteLabel(name string) string {
	if name != "" && plainIdent(name) {
		return name
	}
	return quoteIdent(name)
}

func plainIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case (c >= '0' && c <= '9') || c == '$':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func isKeyword(s string) bool {
	res, err := pg.Scan(s)
	if err != nil || len(res.GetTokens()) != 1 {
		return true // be safe: quote
	}
	return res.GetTokens()[0].GetKeywordKind() != pg.KeywordKind_NO_KEYWORD
}

// columnRef renders a reference to column col of the FROM item called
// refname ("" for an unqualified reference).
func columnRef(refname, col string) string {
	if refname == "" {
		return quoteIdent(col)
	}
	return quoteIdent(refname) + "." + quoteLabel(col)
}
