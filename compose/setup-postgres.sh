#!/bin/sh
# Creates Temporal's two PostgreSQL databases and brings their schemas to the server's version, with the
# temporal-sql-tool and schema files of the admin-tools image of that version. Safe to run again: an existing database
# is kept and only updated.
set -eu
sql() { temporal-sql-tool --plugin postgres12 --ep postgresql -u temporal -p 5432 "$@"; }
for db in temporal:temporal temporal_visibility:visibility; do
  name=${db%%:*}
  schema=${db##*:}
  if sql --db "$name" create; then
    sql --db "$name" setup-schema -v 0.0
  else
    echo "database $name exists; updating its schema"
  fi
  sql --db "$name" update-schema -d "/etc/temporal/schema/postgresql/v12/$schema/versioned"
done
echo 'schemas ready'
