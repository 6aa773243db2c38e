"""Creates the demo shop's database in the session workspace: a few products, an empty basket."""
import sqlite3
import sys

path = sys.argv[1]
db = sqlite3.connect(path)
db.executescript(
    """
    DROP TABLE IF EXISTS products;
    DROP TABLE IF EXISTS basket;
    CREATE TABLE products (sku TEXT PRIMARY KEY, name TEXT, price_cents INTEGER);
    CREATE TABLE basket (user TEXT, sku TEXT);
    INSERT INTO products VALUES ('tea', 'Teapot', 2500), ('cup', 'Cup', 600), ('pot', 'Kettle', 3900);
    """
)
db.commit()
print(f"migrated {path}: 3 products")
