fn main() {
    println!("macfleet: under construction");
}
