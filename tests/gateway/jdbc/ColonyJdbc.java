// A plain JDBC client of the colony's Flight SQL gateway (Arrow Flight SQL JDBC driver):
// metadata, a statement, a prepared statement with a parameter. Prints one line per fact,
// tab-separated, for tests/gateway/test_flightsql_jdbc.py to check.
import java.sql.*;

public class ColonyJdbc {
    public static void main(String[] args) throws Exception {
        String url = args[0];          // jdbc:arrow-flight-sql://127.0.0.1:PORT?useEncryption=false
        String user = args[1], password = args[2], sql = args[3], prepared = args[4];
        double param = Double.parseDouble(args[5]);
        try (Connection c = DriverManager.getConnection(url, user, password)) {
            DatabaseMetaData md = c.getMetaData();
            System.out.println("product\t" + md.getDatabaseProductName());
            try (ResultSet rs = md.getCatalogs()) {
                while (rs.next()) System.out.println("catalog\t" + rs.getString(1));
            }
            try (ResultSet rs = md.getTables(null, null, "%", null)) {
                while (rs.next()) System.out.println("table\t" + rs.getString("TABLE_SCHEM") + "\t" + rs.getString("TABLE_NAME"));
            }
            try (ResultSet rs = md.getColumns(null, null, "particles", "%")) {
                while (rs.next()) System.out.println("column\t" + rs.getString("COLUMN_NAME") + "\t" + rs.getString("TYPE_NAME"));
            }
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
                print("row", rs);
            }
            try (PreparedStatement ps = c.prepareStatement(prepared)) {
                ps.setDouble(1, param);
                try (ResultSet rs = ps.executeQuery()) { print("prow", rs); }
            }
            try (Statement st = c.createStatement()) {
                st.executeQuery("select nope from particles");
            } catch (SQLException e) {
                System.out.println("error\t" + e.getMessage().replace('\n', ' '));
            }
        }
    }

    static void print(String tag, ResultSet rs) throws SQLException {
        int n = rs.getMetaData().getColumnCount();
        while (rs.next()) {
            StringBuilder b = new StringBuilder(tag);
            for (int i = 1; i <= n; i++) b.append('\t').append(rs.getString(i));
            System.out.println(b);
        }
    }
}
