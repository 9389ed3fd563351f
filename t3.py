import sys; sys.path.insert(0, '/tmp/rvw')
from wire import *
import struct
def nbin(digits, weight, sign, dscale):
    return struct.pack('!hhhh', len(digits), weight, sign, dscale) + b''.join(struct.pack('!h', d) for d in digits)
vals = ['0.000', '-0.000', '1.50', '99999999999999999999999999999999999999', '-0.00000000000000000000000000000000000001', '10000', '0.0001', '123456.789', '1e3', '0.10000000000000000000000000000000000000000']
both(["create table t(id int primary key, n numeric)"], [
 ("select " + ", ".join(f"'{v}'::numeric" for v in vals), [], (), (), (1,)),
 ("select $1::text", [nbin([1],0,0,3)], (1700,), (1,)),
 ("select $1::text", [nbin([],0,0,3)], (1700,), (1,)),
 ("select $1::text", [nbin([1],-10,0,40)], (1700,), (1,)),
 ("select $1::text", [nbin([1],-10,0,50)], (1700,), (1,)),
 ("select $1::text", [nbin([1],10,0,0)], (1700,), (1,)),
 ("select $1::text", [nbin([1, 0],0,0,41)], (1700,), (1,)),
 ("insert into t values (1, $1)", [nbin([1, 5000],0,0,50)], (), (1,)),
 ("select n::text from t", ),
 ("select $1::text", [b'\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01'], (0,), (1,)),
 ("select $1", [nbin([1,5000],0,0,2)], (1700,), (1,), (1,)),
 ("select $1::numeric(5,1)", [nbin([1,2500],0,0,2)], (1700,), (1,)),
])
